//! Scratch: lossy encoders evaluated on lossless traces. Not committed.
use mpigram_trace::Trace;
use mpigram_trace::timing::{Bins, ColumnWriter, LossyClock, decode_exact};
use std::collections::HashMap;

struct Call {
    t: u32,
    start: u64,
    end: u64,
}

fn load(dir: &str) -> Vec<Vec<Call>> {
    let trace = Trace::open(std::path::Path::new(dir)).unwrap();
    trace
        .ranks
        .iter()
        .map(|p| {
            let times = decode_exact(&p.times.exact).unwrap();
            let terms = trace.grammar.expand(p.meta.rank).into_iter().flatten();
            terms
                .zip(times)
                .map(|(t, (s, e))| Call {
                    t,
                    start: s,
                    end: e,
                })
                .collect()
        })
        .collect()
}

/// Adaptive frequency model cost in bits.
#[derive(Default)]
struct Adaptive {
    ctx: HashMap<(u64, u64), u32>,
    tot: HashMap<u64, u32>,
    bits: f64,
}
impl Adaptive {
    fn code(&mut self, ctx: u64, sym: u64, alphabet: u32) {
        let n = *self.ctx.get(&(ctx, sym)).unwrap_or(&0);
        let tot = *self.tot.get(&ctx).unwrap_or(&0);
        // KT-like estimator with escape
        let p = (n as f64 + 0.4) / (tot as f64 + 0.4 * alphabet as f64);
        self.bits -= p.log2();
        *self.ctx.entry((ctx, sym)).or_default() += 1;
        *self.tot.entry(ctx).or_default() += 1;
    }
}

fn zstd_cols(cols: &[Vec<u64>], level: i32) -> usize {
    let mut total = 0;
    let n = cols[0].len();
    let mut k = 0;
    while k < n {
        let e = (k + 65536).min(n);
        let mut raw = Vec::new();
        for c in cols {
            for &v in &c[k..e] {
                let mut v = v;
                loop {
                    let b = (v & 0x7f) as u8;
                    v >>= 7;
                    if v == 0 {
                        raw.push(b);
                        break;
                    }
                    raw.push(b | 0x80);
                }
            }
        }
        total += zstd::bulk::compress(&raw, level).unwrap().len() + 8;
        k = e;
    }
    total
}

fn baseline(ranks: &[Vec<Call>], b: f64) -> (usize, f64) {
    let bins = Bins::new(b).unwrap();
    let mut bytes = 0;
    let mut ad = Adaptive::default();
    for calls in ranks {
        let mut clock = LossyClock::default();
        let mut w = ColumnWriter::default();
        for c in calls {
            let (i, d) = clock.encode(&bins, c.start, c.end);
            w.push(i.into(), d.into());
            ad.code(c.t as u64 * 2, i as u64, 500);
            ad.code(c.t as u64 * 2 + 1, d as u64, 500);
        }
        bytes += w.bytes().len();
    }
    (bytes, ad.bits / 8.0)
}

struct Stats {
    cols_bytes: usize,
    cols_bytes19: usize,
    adaptive_bytes: f64,
    worst_doc: f64,   // worst error / ((b-1) * running max M)
    worst_dur: f64,   // worst duration ratio violation
    worst_local: f64, // worst error / ((b-1)*gap of the call)
    mean_err_ticks: f64,
    hits_i: f64,
    hits_d: f64,
}

/// Sticky encoder. `k`: fine grid is base b^(1/k). `decay`: M decays by this per call.
fn sticky(ranks: &[Vec<Call>], b: f64, k: u32, decay: f64, delta: bool, strict: bool) -> Stats {
    let g = b.powf(1.0 / k as f64);
    let grid = Bins::new(g.max(1.0001)).unwrap();
    let mut cols = vec![Vec::new(), Vec::new()];
    let mut ad = Adaptive::default();
    let (mut worst_doc, mut worst_dur, mut worst_local, mut sum_err, mut n_err) =
        (0f64, 0f64, 0f64, 0f64, 0f64);
    let (mut hi_n, mut hd_n, mut total, mut fallbacks) = (0f64, 0f64, 0f64, 0f64);
    for calls in ranks {
        let mut last: HashMap<u32, (u32, u32)> = HashMap::new();
        let (mut e_dec, mut e_true, mut m, mut m_doc) = (0u64, 0u64, 0f64, 0u64);
        for c in calls {
            let gap = c.end - e_true;
            m = (m * decay).max(gap as f64);
            m_doc = m_doc.max(gap);
            let s = (b - 1.0) * m;
            let d = c.end - c.start;
            let val = |code: u32| grid.value(code).unwrap();
            let ok_d = |code: u32| {
                let v = val(code);
                v <= d && (v as f64) * b > d as f64
            };
            // feasible (interval code, duration code)?
            let hi0 = c.start.saturating_sub(e_dec);
            let fits = |ci: u32, cd: u32| {
                if strict {
                    let v = val(ci);
                    return v <= hi0 && (v as f64) * b > hi0 as f64 || (hi0 == 0 && v == 0);
                }
                let sd = e_dec + val(ci);
                let ed = sd + val(cd);
                sd <= c.start
                    && ((c.start - sd) as f64) <= s
                    && ed <= c.end
                    && ((c.end - ed) as f64) <= s
            };
            let prev = last.get(&c.t).copied();
            let cd_hit = prev.map(|p| p.1).filter(|&pd| ok_d(pd));
            let cd = cd_hit.unwrap_or_else(|| {
                let mut c0 = grid.code((d as f64 / b.sqrt()) as u64);
                while !ok_d(c0) && val(c0) < d {
                    c0 += 1;
                }
                if ok_d(c0) { c0 } else { grid.code(d) }
            });
            let hi = c.start.saturating_sub(e_dec);
            let (mut ci, mut cd, mut hit_i, mut hit_d) = (0, cd, false, cd_hit.is_some());
            match prev {
                Some((pi, _)) if fits(pi, cd) => {
                    ci = pi;
                    hit_i = true;
                }
                _ => {
                    let w = s - (d - val(cd)) as f64;
                    let mid = (hi as f64 - w / 2.0).max(0.0) as u64;
                    let c0 = grid.code(mid);
                    if fits(c0, cd) {
                        ci = c0;
                    } else if fits(grid.code(hi), cd) {
                        ci = grid.code(hi);
                    } else {
                        ci = grid.code(hi);
                        cd = grid.code(d);
                        hit_d = prev.is_some_and(|p| p.1 == cd);
                        fallbacks += 1.0;
                        assert!(fits(ci, cd) || true);
                    }
                }
            }
            let iv = val(ci);
            let dv = val(cd);
            let start_d = e_dec + iv;
            let end_d = start_d + dv;
            e_dec = end_d;
            e_true = c.end;
            for (t, td) in [(c.start, start_d), (c.end, end_d)] {
                let err = t as f64 - td as f64;
                worst_doc = worst_doc.max(err / ((b - 1.0) * m_doc as f64 + 1.0));
                worst_local = worst_local.max(err / ((b - 1.0) * gap as f64 + 1.0));
                if err < 0.0 {
                    worst_doc = worst_doc.max(1000.0);
                }
                sum_err += err;
                n_err += 1.0;
            }
            worst_dur = worst_dur.max(if dv as f64 * b + 1.0 >= d as f64 && dv <= d {
                0.0
            } else {
                1.0
            });
            let (pi, pd) = prev.unwrap_or((0, 0));
            let sym = |hit: bool, code: u32, p: u32| -> u64 {
                if hit {
                    0
                } else if delta && prev.is_some() {
                    let dlt = code as i64 - p as i64;
                    // zigzag, +1; 0 reserved
                    (((dlt << 1) ^ (dlt >> 63)) as u64) + 1
                } else {
                    code as u64 + 1
                }
            };
            let si = sym(hit_i, ci, pi);
            let sd = sym(hit_d, cd, pd);
            cols[0].push(si);
            cols[1].push(sd);
            ad.code(c.t as u64 * 2, si, 2000);
            ad.code(c.t as u64 * 2 + 1, sd, 2000);
            hi_n += hit_i as u32 as f64;
            hd_n += hit_d as u32 as f64;
            total += 1.0;
            last.insert(c.t, (ci, cd));
        }
    }
    eprintln!("fallbacks {fallbacks}");
    Stats {
        cols_bytes: zstd_cols(&cols, 1),
        cols_bytes19: zstd_cols(&cols, 19),
        adaptive_bytes: ad.bits / 8.0,
        worst_doc,
        worst_dur,
        worst_local,
        mean_err_ticks: sum_err / n_err,
        hits_i: hi_n / total,
        hits_d: hd_n / total,
    }
}

fn contexts(ranks: &[Vec<Call>], b: f64) {
    let bins = Bins::new(b).unwrap();
    let n: usize = ranks.iter().map(Vec::len).sum();
    let mut models: Vec<(&str, Adaptive, Adaptive)> = [
        "sig",
        "sig+prev_same_sig",
        "sig+prev_call",
        "sig+prev2_same_sig",
        "none",
    ]
    .into_iter()
    .map(|s| (s, Adaptive::default(), Adaptive::default()))
    .collect();
    for calls in ranks {
        let mut clock = LossyClock::default();
        let mut last: HashMap<u32, (Vec<u32>, Vec<u32>)> = HashMap::new();
        let (mut pi, mut pd) = (0u32, 0u32);
        for c in calls {
            let (i, d) = clock.encode(&bins, c.start, c.end);
            let h = last.entry(c.t).or_default();
            let g = |v: &Vec<u32>, k: usize| v.len().checked_sub(k).map_or(999, |j| v[j]) as u64;
            let t = c.t as u64;
            let ctx = [
                (t, t),
                (t << 20 | g(&h.0, 1), t << 20 | g(&h.1, 1)),
                (t << 20 | pi as u64, t << 20 | pd as u64),
                (
                    t << 20 | g(&h.0, 1) << 10 | g(&h.0, 2),
                    t << 20 | g(&h.1, 1) << 10 | g(&h.1, 2),
                ),
                (0, 0),
            ];
            for (m, (ci, cd)) in models.iter_mut().zip(ctx) {
                m.1.code(ci, i as u64, 500);
                m.2.code(cd, d as u64, 500);
            }
            h.0.push(i);
            h.1.push(d);
            pi = i;
            pd = d;
        }
    }
    for (name, a, d) in &models {
        println!(
            "ctx {name}: interval {:.3} duration {:.3} B/call",
            a.bits / 8.0 / n as f64,
            d.bits / 8.0 / n as f64
        );
    }
}

fn grouped(ranks: &[Vec<Call>], b: f64) {
    let bins = Bins::new(b).unwrap();
    let n: usize = ranks.iter().map(Vec::len).sum();
    for level in [1, 3, 9, 19] {
        let (mut plain, mut by_sig, mut by_sig_pair) = (0usize, 0usize, 0usize);
        for calls in ranks {
            let mut clock = LossyClock::default();
            let codes: Vec<(u32, u32, u32)> = calls
                .iter()
                .map(|c| {
                    let (i, d) = clock.encode(&bins, c.start, c.end);
                    (c.t, i, d)
                })
                .collect();
            for block in codes.chunks(65536) {
                let ci: Vec<u64> = block.iter().map(|x| x.1 as u64).collect();
                let cd: Vec<u64> = block.iter().map(|x| x.2 as u64).collect();
                plain += zstd_cols(&[ci, cd], level);
                let mut sorted = block.to_vec();
                sorted.sort_by_key(|x| x.0);
                let ci: Vec<u64> = sorted.iter().map(|x| x.1 as u64).collect();
                let cd: Vec<u64> = sorted.iter().map(|x| x.2 as u64).collect();
                by_sig += zstd_cols(&[ci, cd], level);
                let pair: Vec<u64> = sorted
                    .iter()
                    .flat_map(|x| [x.1 as u64, x.2 as u64])
                    .collect();
                by_sig_pair += zstd_cols(&[pair], level);
            }
        }
        println!(
            "zstd {level}: plain {:.3} grouped {:.3} grouped-interleaved {:.3} B/call",
            plain as f64 / n as f64,
            by_sig as f64 / n as f64,
            by_sig_pair as f64 / n as f64
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let b: f64 = args.get(2).map_or(1.1, |s| s.parse().unwrap());
    let ranks = load(&args[1]);
    let n: usize = ranks.iter().map(Vec::len).sum();
    let (bb, ab) = baseline(&ranks, b);
    println!(
        "calls {n}; baseline zstd {:.3} B/call; adaptive ctx=sig {:.3}",
        bb as f64 / n as f64,
        ab / n as f64
    );
    grouped(&ranks, b);
    contexts(&ranks, b);
    if args.len() > 3 {
        return;
    }
    for (k, decay, delta, strict) in [
        (1u32, 1.0, false, true),
        (2, 1.0, false, true),
        (3, 1.0, false, true),
        (1, 0.99, false, false),
        (1, 0.9, false, false),
        (2, 0.9, false, false),
    ] {
        {
            let s = sticky(&ranks, b, k, decay, delta, strict);
            print!("strict {strict} ");
            println!(
                "k {k} decay {decay} delta {delta}: zstd1 {:.3} zstd19 {:.3} adaptive {:.3} B/call; hits i {:.2} d {:.2}; worst doc {:.2} local {:.2} dur {} mean err {:.0}",
                s.cols_bytes as f64 / n as f64,
                s.cols_bytes19 as f64 / n as f64,
                s.adaptive_bytes / n as f64,
                s.hits_i,
                s.hits_d,
                s.worst_doc,
                s.worst_local,
                s.worst_dur,
                s.mean_err_ticks
            );
        }
    }
}
