//! Stand-ins for the application's own functions (reduction operators,
//! attribute copy and delete functions, error handlers, generalized
//! requests): one per function the tracer saw, of the C type of its first use.

/// The name of the stand-in for the application's function number `id`.
pub fn callback_name(id: u64) -> String {
    format!("user_function_{id}")
}

/// The definition of a stand-in of C function type `ty` named `name`: it
/// reports success and does the least its type implies (a reduction leaves
/// its output as is; an attribute copy copies the value, as MPI_COMM_DUP_FN
/// does, so that attributes reach duplicates as they did).
pub fn callback_stub(ty: &str, name: &str) -> Option<String> {
    let body = match ty {
        "MPI_User_function" => {
            "void {N}(void *in, void *inout, int *len, MPI_Datatype *type)\n{\n    (void)in; (void)inout; (void)len; (void)type;\n}"
        }
        "MPI_User_function_c" => {
            "void {N}(void *in, void *inout, MPI_Count *len, MPI_Datatype *type)\n{\n    (void)in; (void)inout; (void)len; (void)type;\n}"
        }
        "MPI_Comm_copy_attr_function" | "MPI_Copy_function" => {
            "int {N}(MPI_Comm o, int k, void *extra, void *in, void *out, int *flag)\n{\n    (void)o; (void)k; (void)extra;\n    *(void **)out = in;\n    *flag = 1;\n    return MPI_SUCCESS;\n}"
        }
        "MPI_Type_copy_attr_function" => {
            "int {N}(MPI_Datatype o, int k, void *extra, void *in, void *out, int *flag)\n{\n    (void)o; (void)k; (void)extra;\n    *(void **)out = in;\n    *flag = 1;\n    return MPI_SUCCESS;\n}"
        }
        "MPI_Win_copy_attr_function" => {
            "int {N}(MPI_Win o, int k, void *extra, void *in, void *out, int *flag)\n{\n    (void)o; (void)k; (void)extra;\n    *(void **)out = in;\n    *flag = 1;\n    return MPI_SUCCESS;\n}"
        }
        "MPI_Comm_delete_attr_function" | "MPI_Delete_function" => {
            "int {N}(MPI_Comm o, int k, void *value, void *extra)\n{\n    (void)o; (void)k; (void)value; (void)extra;\n    return MPI_SUCCESS;\n}"
        }
        "MPI_Type_delete_attr_function" => {
            "int {N}(MPI_Datatype o, int k, void *value, void *extra)\n{\n    (void)o; (void)k; (void)value; (void)extra;\n    return MPI_SUCCESS;\n}"
        }
        "MPI_Win_delete_attr_function" => {
            "int {N}(MPI_Win o, int k, void *value, void *extra)\n{\n    (void)o; (void)k; (void)value; (void)extra;\n    return MPI_SUCCESS;\n}"
        }
        "MPI_Comm_errhandler_function" | "MPI_Handler_function" => {
            "void {N}(MPI_Comm *o, int *code, ...)\n{\n    (void)o; (void)code;\n}"
        }
        "MPI_Win_errhandler_function" => {
            "void {N}(MPI_Win *o, int *code, ...)\n{\n    (void)o; (void)code;\n}"
        }
        "MPI_File_errhandler_function" => {
            "void {N}(MPI_File *o, int *code, ...)\n{\n    (void)o; (void)code;\n}"
        }
        "MPI_Session_errhandler_function" => {
            "void {N}(MPI_Session *o, int *code, ...)\n{\n    (void)o; (void)code;\n}"
        }
        "MPI_Grequest_query_function" => {
            "int {N}(void *extra, MPI_Status *status)\n{\n    (void)extra;\n    PMPI_Status_set_elements(status, MPI_BYTE, 0);\n    PMPI_Status_set_cancelled(status, 0);\n    status->MPI_SOURCE = MPI_UNDEFINED;\n    status->MPI_TAG = MPI_UNDEFINED;\n    return MPI_SUCCESS;\n}"
        }
        "MPI_Grequest_free_function" => {
            "int {N}(void *extra)\n{\n    (void)extra;\n    return MPI_SUCCESS;\n}"
        }
        "MPI_Grequest_cancel_function" => {
            "int {N}(void *extra, int complete)\n{\n    (void)extra; (void)complete;\n    return MPI_SUCCESS;\n}"
        }
        _ => return None,
    };
    Some(format!("static {}", body.replace("{N}", name)))
}
