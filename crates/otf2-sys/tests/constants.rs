//! The constants of the bindings are the headers' values: a C program
//! prints each, compiled against the installed `otf2/otf2.h`.

use mpigram_otf2_sys::*;
use std::process::Command;

#[test]
fn constants_match_the_installed_headers() {
    let checks: &[(&str, u64)] = &[
        ("OTF2_SUCCESS", OTF2_SUCCESS as u64),
        ("OTF2_FILEMODE_WRITE", OTF2_FILEMODE_WRITE.into()),
        ("OTF2_SUBSTRATE_POSIX", OTF2_SUBSTRATE_POSIX.into()),
        ("OTF2_COMPRESSION_NONE", OTF2_COMPRESSION_NONE.into()),
        ("OTF2_FLUSH", OTF2_FLUSH.into()),
        ("OTF2_UNDEFINED_UINT32", OTF2_UNDEFINED_UINT32.into()),
        ("OTF2_UNDEFINED_UINT64", OTF2_UNDEFINED_UINT64),
        ("OTF2_UNDEFINED_STRING", OTF2_UNDEFINED_STRING.into()),
        (
            "OTF2_UNDEFINED_SYSTEM_TREE_NODE",
            OTF2_UNDEFINED_SYSTEM_TREE_NODE.into(),
        ),
        (
            "OTF2_UNDEFINED_LOCATION_GROUP",
            OTF2_UNDEFINED_LOCATION_GROUP.into(),
        ),
        ("OTF2_UNDEFINED_COMM", OTF2_UNDEFINED_COMM.into()),
        ("OTF2_UNDEFINED_TIMESTAMP", OTF2_UNDEFINED_TIMESTAMP),
        (
            "OTF2_REGION_ROLE_FUNCTION",
            OTF2_REGION_ROLE_FUNCTION.into(),
        ),
        ("OTF2_REGION_ROLE_BARRIER", OTF2_REGION_ROLE_BARRIER.into()),
        (
            "OTF2_REGION_ROLE_COLL_ONE2ALL",
            OTF2_REGION_ROLE_COLL_ONE2ALL.into(),
        ),
        (
            "OTF2_REGION_ROLE_COLL_ALL2ONE",
            OTF2_REGION_ROLE_COLL_ALL2ONE.into(),
        ),
        (
            "OTF2_REGION_ROLE_COLL_ALL2ALL",
            OTF2_REGION_ROLE_COLL_ALL2ALL.into(),
        ),
        (
            "OTF2_REGION_ROLE_COLL_OTHER",
            OTF2_REGION_ROLE_COLL_OTHER.into(),
        ),
        (
            "OTF2_REGION_ROLE_POINT2POINT",
            OTF2_REGION_ROLE_POINT2POINT.into(),
        ),
        ("OTF2_PARADIGM_MPI", OTF2_PARADIGM_MPI.into()),
        (
            "OTF2_PARADIGM_CLASS_PROCESS",
            OTF2_PARADIGM_CLASS_PROCESS.into(),
        ),
        ("OTF2_REGION_FLAG_NONE", OTF2_REGION_FLAG_NONE.into()),
        (
            "OTF2_LOCATION_GROUP_TYPE_PROCESS",
            OTF2_LOCATION_GROUP_TYPE_PROCESS.into(),
        ),
        (
            "OTF2_LOCATION_TYPE_CPU_THREAD",
            OTF2_LOCATION_TYPE_CPU_THREAD.into(),
        ),
        (
            "OTF2_GROUP_TYPE_COMM_LOCATIONS",
            OTF2_GROUP_TYPE_COMM_LOCATIONS.into(),
        ),
        (
            "OTF2_GROUP_TYPE_COMM_GROUP",
            OTF2_GROUP_TYPE_COMM_GROUP.into(),
        ),
        (
            "OTF2_GROUP_TYPE_COMM_SELF",
            OTF2_GROUP_TYPE_COMM_SELF.into(),
        ),
        ("OTF2_GROUP_FLAG_NONE", OTF2_GROUP_FLAG_NONE.into()),
        ("OTF2_COMM_FLAG_NONE", OTF2_COMM_FLAG_NONE.into()),
        (
            "OTF2_COLLECTIVE_OP_BARRIER",
            OTF2_COLLECTIVE_OP_BARRIER.into(),
        ),
        ("OTF2_COLLECTIVE_OP_BCAST", OTF2_COLLECTIVE_OP_BCAST.into()),
        (
            "OTF2_COLLECTIVE_OP_GATHER",
            OTF2_COLLECTIVE_OP_GATHER.into(),
        ),
        (
            "OTF2_COLLECTIVE_OP_GATHERV",
            OTF2_COLLECTIVE_OP_GATHERV.into(),
        ),
        (
            "OTF2_COLLECTIVE_OP_SCATTER",
            OTF2_COLLECTIVE_OP_SCATTER.into(),
        ),
        (
            "OTF2_COLLECTIVE_OP_SCATTERV",
            OTF2_COLLECTIVE_OP_SCATTERV.into(),
        ),
        (
            "OTF2_COLLECTIVE_OP_ALLGATHER",
            OTF2_COLLECTIVE_OP_ALLGATHER.into(),
        ),
        (
            "OTF2_COLLECTIVE_OP_ALLGATHERV",
            OTF2_COLLECTIVE_OP_ALLGATHERV.into(),
        ),
        (
            "OTF2_COLLECTIVE_OP_ALLTOALL",
            OTF2_COLLECTIVE_OP_ALLTOALL.into(),
        ),
        (
            "OTF2_COLLECTIVE_OP_ALLTOALLV",
            OTF2_COLLECTIVE_OP_ALLTOALLV.into(),
        ),
        (
            "OTF2_COLLECTIVE_OP_ALLTOALLW",
            OTF2_COLLECTIVE_OP_ALLTOALLW.into(),
        ),
        (
            "OTF2_COLLECTIVE_OP_ALLREDUCE",
            OTF2_COLLECTIVE_OP_ALLREDUCE.into(),
        ),
        (
            "OTF2_COLLECTIVE_OP_REDUCE",
            OTF2_COLLECTIVE_OP_REDUCE.into(),
        ),
        (
            "OTF2_COLLECTIVE_OP_REDUCE_SCATTER",
            OTF2_COLLECTIVE_OP_REDUCE_SCATTER.into(),
        ),
        ("OTF2_COLLECTIVE_OP_SCAN", OTF2_COLLECTIVE_OP_SCAN.into()),
        (
            "OTF2_COLLECTIVE_OP_EXSCAN",
            OTF2_COLLECTIVE_OP_EXSCAN.into(),
        ),
        (
            "OTF2_COLLECTIVE_OP_REDUCE_SCATTER_BLOCK",
            OTF2_COLLECTIVE_OP_REDUCE_SCATTER_BLOCK.into(),
        ),
        (
            "OTF2_COLLECTIVE_OP_CREATE_HANDLE",
            OTF2_COLLECTIVE_OP_CREATE_HANDLE.into(),
        ),
        (
            "OTF2_COLLECTIVE_OP_DESTROY_HANDLE",
            OTF2_COLLECTIVE_OP_DESTROY_HANDLE.into(),
        ),
        (
            "OTF2_COLLECTIVE_ROOT_NONE",
            OTF2_COLLECTIVE_ROOT_NONE.into(),
        ),
        (
            "sizeof(OTF2_ErrorCode)",
            std::mem::size_of::<OTF2_ErrorCode>() as u64,
        ),
    ];
    let dir = std::env::temp_dir().join(format!("otf2-constants-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut c = String::from("#include <otf2/otf2.h>\n#include <stdio.h>\nint main(void) {\n");
    for (name, _) in checks {
        c.push_str(&format!(
            "    printf(\"%llu\\n\", (unsigned long long)({name}));\n"
        ));
    }
    c.push_str("    return 0;\n}\n");
    let src = dir.join("constants.c");
    let exe = dir.join("constants");
    std::fs::write(&src, c).unwrap();
    let cc = Command::new("cc")
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("a C compiler (scripts/setup installs gcc)");
    assert!(
        cc.status.success(),
        "{}",
        String::from_utf8_lossy(&cc.stderr)
    );
    let out = Command::new(&exe).output().unwrap();
    let values: Vec<u64> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(values.len(), checks.len());
    for ((name, ours), theirs) in checks.iter().zip(values) {
        assert_eq!(*ours, theirs, "{name}");
    }
    std::fs::remove_dir_all(&dir).ok();
}
