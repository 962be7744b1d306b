//! Finding the MPI library's symbols. The tracer is preloaded: the real
//! functions come after it, and `dlsym(RTLD_NEXT)` finds them where the MPI
//! library is in the global scope, as it is in a program linked with it. A
//! library that a `dlopen` with `RTLD_LOCAL` loaded is not: Python loads
//! mpi4py's extension module so, and with it `libmpi.so`, whose calls then
//! reach the tracer's wrappers (the preload is global) while their real
//! functions stay out of `RTLD_NEXT`'s sight. A symbol not found in the
//! global scope is therefore looked up in each loaded object's own scope
//! (the object and its dependencies), the tracer's aside.

use std::ffi::{CStr, CString, c_void};

/// The definition of `name` after the tracer's (its real function, for a
/// function the tracer wraps), or null.
pub fn next(name: &CStr) -> *mut c_void {
    in_global_scope_or_local_ones(libc::RTLD_NEXT, name)
}

/// The first definition of `name` (which may be the tracer's own), or null.
pub fn anywhere(name: &CStr) -> *mut c_void {
    in_global_scope_or_local_ones(libc::RTLD_DEFAULT, name)
}

/// `name` looked up with `dlsym(scope)` (RTLD_NEXT or RTLD_DEFAULT: the
/// global scope, seen from the tracer), else in the loaded objects' own.
fn in_global_scope_or_local_ones(scope: *mut c_void, name: &CStr) -> *mut c_void {
    // SAFETY: dlsym looks a NUL-terminated name up.
    let f = unsafe { libc::dlsym(scope, name.as_ptr()) };
    if f.is_null() {
        in_local_scopes(name)
    } else {
        f
    }
}

/// `name` as some loaded object other than the tracer sees it, defined
/// outside the tracer, or null.
#[cold]
fn in_local_scopes(name: &CStr) -> *mut c_void {
    let own = object_base(in_local_scopes as *const c_void);
    for object in loaded_objects() {
        // SAFETY: RTLD_NOLOAD only finds an object already loaded (taking
        // a reference, given back below); dlsym looks a name up in it.
        unsafe {
            let handle = libc::dlopen(object.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD);
            if handle.is_null() {
                continue;
            }
            let f = libc::dlsym(handle, name.as_ptr());
            libc::dlclose(handle);
            if !f.is_null() && object_base(f) != own {
                return f;
            }
        }
    }
    std::ptr::null_mut()
}

/// The load address of the object that holds `address` (null if none).
fn object_base(address: *const c_void) -> *mut c_void {
    object(address).map_or(std::ptr::null_mut(), |info| info.dli_fbase)
}

/// What the dynamic linker knows of the object that holds `address`: its
/// file's name and load address, and the symbol nearest below it.
pub fn object(address: *const c_void) -> Option<libc::Dl_info> {
    let mut info = std::mem::MaybeUninit::<libc::Dl_info>::uninit();
    // SAFETY: dladdr fills `info` when it returns non-zero.
    unsafe { (libc::dladdr(address, info.as_mut_ptr()) != 0).then(|| info.assume_init()) }
}

/// The file names of the loaded objects that have one, in load order
/// (collected first: `dlopen` is not to be called while `dl_iterate_phdr`
/// holds the loader's lock).
fn loaded_objects() -> Vec<CString> {
    unsafe extern "C" fn each(
        info: *mut libc::dl_phdr_info,
        _size: usize,
        names: *mut c_void,
    ) -> libc::c_int {
        // SAFETY: `names` is the vector below; `info` is valid during the
        // call, and its name NUL-terminated or null.
        unsafe {
            let names = &mut *names.cast::<Vec<CString>>();
            let name = (*info).dlpi_name;
            if !name.is_null() && *name != 0 {
                names.push(CStr::from_ptr(name).to_owned());
            }
        }
        0
    }
    let mut names: Vec<CString> = Vec::new();
    // SAFETY: `each` only pushes to `names`, which outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(each), (&raw mut names).cast()) };
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbols_are_found_in_the_global_scope_and_in_objects_scopes() {
        assert!(!next(c"strlen").is_null());
        assert!(!anywhere(c"strlen").is_null());
        // Found by the search of the loaded objects: the C library's
        // `strlen` as the objects that depend on it see it.
        assert_eq!(in_local_scopes(c"strlen"), anywhere(c"strlen"));
        assert!(next(c"mpigram_no_such_symbol").is_null());
        assert!(!loaded_objects().is_empty());
    }
}
