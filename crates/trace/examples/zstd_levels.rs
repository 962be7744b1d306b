use mpigram_trace::Trace;
use mpigram_trace::timing::decode_exact;
use mpigram_varint::PutVarint;
use std::time::Instant;
fn main() {
    let dir = std::env::args().nth(1).unwrap();
    let trace = Trace::open(std::path::Path::new(&dir)).unwrap();
    let mut raws = Vec::new();
    let mut calls = 0;
    for part in &trace.ranks {
        let times = decode_exact(&part.times.exact).unwrap();
        let mut last_end = 0u64;
        let zz = |v: u64| (v << 1) ^ ((v as i64 >> 63) as u64);
        for chunk in times.chunks(65536) {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            for &(s, e) in chunk {
                a.put_u64(zz(s.wrapping_sub(last_end)));
                b.put_u64(zz(e.wrapping_sub(s)));
                last_end = e;
            }
            let mut raw = Vec::new();
            raw.put_u64(a.len() as u64);
            raw.extend_from_slice(&a);
            raw.extend_from_slice(&b);
            raws.push(raw);
            calls += chunk.len();
        }
    }
    let rawlen: usize = raws.iter().map(|r| r.len()).sum();
    println!(
        "calls {calls} raw {:.2} B/call",
        rawlen as f64 / calls as f64
    );
    for level in [-7, -5, -3, -1, 1, 2, 3] {
        let t = Instant::now();
        let mut out = 0;
        for _ in 0..5 {
            out = 0;
            for r in &raws {
                out += zstd::bulk::compress(r, level).unwrap().len();
            }
        }
        let ns = t.elapsed().as_nanos() as f64 / 5.0 / calls as f64;
        println!(
            "level {level}: {:.3} B/call, {:.1} ns/call",
            out as f64 / calls as f64,
            ns
        );
    }
}
