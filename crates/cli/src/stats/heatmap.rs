//! The communication matrix as a heat map: one cell per (sender, receiver)
//! pair of world ranks, coloured by bytes on a log scale, with a legend and
//! rank-labelled axes. The picture is laid out once as rectangles and
//! labels; SVG writes them as elements, PNG rasterises them (labels in a
//! small bitmap font).

use super::font;
use super::human_bytes;
use anyhow::{Context, Result, bail};
use mpigram_analysis::stats::CommMatrix;
use std::fmt::Write as _;
use std::path::Path;

type Rgb = [u8; 3];

const WHITE: Rgb = [255, 255, 255];
const INK: Rgb = [40, 40, 40];
/// Pairs that exchanged nothing.
const EMPTY: Rgb = [238, 238, 238];
/// The colour scale, from the fewest bytes to the most: pale yellow through
/// orange and red to dark purple (light to dark, readable in grey too).
const SCALE: [Rgb; 5] = [
    [255, 245, 200],
    [250, 196, 92],
    [238, 116, 44],
    [190, 30, 45],
    [84, 10, 70],
];

/// PNG labels: font pixels are this many image pixels.
const PNG_FONT_SCALE: usize = 2;
/// Label height in image pixels (SVG font size).
const TEXT: f64 = 14.0;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Anchor {
    Start,
    Middle,
    End,
}

#[derive(Clone, Debug, PartialEq)]
enum Shape {
    Rect {
        x: f64,
        y: f64,
        w: f64,
        h: f64,
        fill: Rgb,
    },
    /// `y` is the baseline; vertical text reads upwards, centred on (x, y).
    Text {
        x: f64,
        y: f64,
        text: String,
        anchor: Anchor,
        vertical: bool,
    },
}

/// Writes the heat map to `path`, as SVG or PNG by its extension.
pub fn write(matrix: &CommMatrix, path: &Path) -> Result<()> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let bytes = match ext.as_deref() {
        Some("svg") => {
            let (w, h, shapes) = layout(matrix)?;
            svg(w, h, &shapes).into_bytes()
        }
        Some("png") => {
            let (w, h, shapes) = layout(matrix)?;
            png(w, h, &shapes)?
        }
        _ => bail!(
            "--heatmap {}: the file name must end in .svg or .png",
            path.display()
        ),
    };
    std::fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))
}

/// Colour of `bytes` on the log scale from `min` to `max` (non-zero bytes).
fn colour(bytes: u64, min: u64, max: u64) -> Rgb {
    let t = if max <= min || bytes <= min {
        if max <= min { 1.0 } else { 0.0 }
    } else {
        ((bytes as f64).ln() - (min as f64).ln()) / ((max as f64).ln() - (min as f64).ln())
    };
    let t = t.clamp(0.0, 1.0) * (SCALE.len() - 1) as f64;
    let i = (t.floor() as usize).min(SCALE.len() - 2);
    let f = t - i as f64;
    let mix = |a: u8, b: u8| (f64::from(a) + (f64::from(b) - f64::from(a)) * f).round() as u8;
    [0, 1, 2].map(|c| mix(SCALE[i][c], SCALE[i + 1][c]))
}

/// Rank labels every `step` ranks, `step` one of 1, 2, 5, 10, 20, 50, ...:
/// the smallest that labels at most 16 ranks.
fn tick_step(ranks: u32) -> u32 {
    let mut step = 1u32;
    while ranks.div_ceil(step) > 16 {
        let magnitude = 10u32.pow(step.ilog10());
        step = match step / magnitude {
            1 => 2 * magnitude,
            2 => 5 * magnitude,
            _ => 10 * magnitude,
        };
    }
    step
}

/// Width, height and shapes of the picture.
fn layout(matrix: &CommMatrix) -> Result<(usize, usize, Vec<Shape>)> {
    let n = matrix.ranks;
    if n == 0 {
        bail!("no ranks: the trace has no MPI_COMM_WORLD to draw");
    }
    let cell = (640 / n).max(1) as f64;
    let grid = cell * f64::from(n);
    let (left, top) = (80.0, 60.0);
    let legend_x = left + grid + 40.0;
    let width = (legend_x + 150.0).ceil() as usize;
    let height = (top + grid.max(220.0) + 70.0).ceil() as usize;
    let mut shapes = vec![Shape::Rect {
        x: 0.0,
        y: 0.0,
        w: width as f64,
        h: height as f64,
        fill: WHITE,
    }];
    let text = |x: f64, y: f64, text: String, anchor: Anchor| Shape::Text {
        x,
        y,
        text,
        anchor,
        vertical: false,
    };
    shapes.push(text(
        left,
        24.0,
        "point-to-point bytes, sender to receiver".into(),
        Anchor::Start,
    ));

    let bytes: Vec<u64> = matrix
        .pairs
        .values()
        .map(|t| t.bytes)
        .filter(|&b| b > 0)
        .collect();
    let (min, max) = (
        bytes.iter().copied().min().unwrap_or(0),
        bytes.iter().copied().max().unwrap_or(0),
    );
    shapes.push(Shape::Rect {
        x: left,
        y: top,
        w: grid,
        h: grid,
        fill: EMPTY,
    });
    for (&(from, to), t) in &matrix.pairs {
        if from >= n || to >= n || t.messages == 0 {
            continue;
        }
        shapes.push(Shape::Rect {
            x: left + cell * f64::from(to),
            y: top + cell * f64::from(from),
            w: cell,
            h: cell,
            fill: colour(t.bytes, min, max),
        });
    }

    // Axes: receivers along the bottom, senders down the left side.
    let step = tick_step(n);
    for r in (0..n).step_by(step as usize) {
        let centre = cell * (f64::from(r) + 0.5);
        shapes.push(text(
            left + centre,
            top + grid + 4.0 + TEXT,
            r.to_string(),
            Anchor::Middle,
        ));
        shapes.push(text(
            left - 6.0,
            top + centre + TEXT / 2.0,
            r.to_string(),
            Anchor::End,
        ));
    }
    shapes.push(text(
        left + grid / 2.0,
        top + grid + 16.0 + 2.0 * TEXT,
        "receiver rank".into(),
        Anchor::Middle,
    ));
    shapes.push(Shape::Text {
        x: left - 44.0,
        y: top + grid / 2.0,
        text: "sender rank".into(),
        anchor: Anchor::Middle,
        vertical: true,
    });

    // Legend: the colour bar, most bytes at the top, and an empty swatch.
    let bar_h = 180.0;
    let steps = 60;
    shapes.push(text(
        legend_x,
        top - 8.0,
        "bytes (log)".into(),
        Anchor::Start,
    ));
    for i in 0..steps {
        let t = 1.0 - (f64::from(i) + 0.5) / f64::from(steps);
        let b = if max > min {
            ((min as f64).ln() + t * ((max as f64).ln() - (min as f64).ln())).exp() as u64
        } else {
            max
        };
        shapes.push(Shape::Rect {
            x: legend_x,
            y: top + bar_h * f64::from(i) / f64::from(steps),
            w: 18.0,
            h: bar_h / f64::from(steps) + 0.5,
            fill: colour(b.clamp(min, max), min, max),
        });
    }
    let label_x = legend_x + 26.0;
    if bytes.is_empty() {
        shapes.push(text(
            label_x,
            top + TEXT,
            "no messages".into(),
            Anchor::Start,
        ));
    } else {
        shapes.push(text(label_x, top + TEXT, human_bytes(max), Anchor::Start));
        if max > min {
            let mid = ((min as f64) * (max as f64)).sqrt() as u64;
            shapes.push(text(
                label_x,
                top + bar_h / 2.0 + TEXT / 2.0,
                human_bytes(mid),
                Anchor::Start,
            ));
            shapes.push(text(label_x, top + bar_h, human_bytes(min), Anchor::Start));
        }
    }
    shapes.push(Shape::Rect {
        x: legend_x,
        y: top + bar_h + 16.0,
        w: 18.0,
        h: 14.0,
        fill: EMPTY,
    });
    shapes.push(text(
        label_x,
        top + bar_h + 30.0,
        "none".into(),
        Anchor::Start,
    ));
    Ok((width, height, shapes))
}

fn hex(c: Rgb) -> String {
    format!("#{:02x}{:02x}{:02x}", c[0], c[1], c[2])
}

fn svg(width: usize, height: usize, shapes: &[Shape]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="{TEXT}">"#
    );
    for shape in shapes {
        match shape {
            Shape::Rect { x, y, w, h, fill } => {
                let _ = writeln!(
                    s,
                    r#"<rect x="{x:.2}" y="{y:.2}" width="{w:.2}" height="{h:.2}" fill="{}"/>"#,
                    hex(*fill)
                );
            }
            Shape::Text {
                x,
                y,
                text,
                anchor,
                vertical,
            } => {
                let anchor = match anchor {
                    Anchor::Start => "start",
                    Anchor::Middle => "middle",
                    Anchor::End => "end",
                };
                let rotate = if *vertical {
                    format!(r#" transform="rotate(-90 {x:.2} {y:.2})""#)
                } else {
                    String::new()
                };
                let _ = writeln!(
                    s,
                    r#"<text x="{x:.2}" y="{y:.2}" text-anchor="{anchor}" fill="{}"{rotate}>{}</text>"#,
                    hex(INK),
                    escape(text)
                );
            }
        }
    }
    s.push_str("</svg>\n");
    s
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// An RGB image being drawn.
struct Canvas {
    width: usize,
    height: usize,
    pixels: Vec<u8>,
}

impl Canvas {
    fn set(&mut self, x: i64, y: i64, c: Rgb) {
        if (0..self.width as i64).contains(&x) && (0..self.height as i64).contains(&y) {
            let i = (y as usize * self.width + x as usize) * 3;
            self.pixels[i..i + 3].copy_from_slice(&c);
        }
    }

    fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, c: Rgb) {
        let (x0, y0) = (x.round() as i64, y.round() as i64);
        let (x1, y1) = ((x + w).round() as i64, (y + h).round() as i64);
        for py in y0..y1.max(y0 + 1) {
            for px in x0..x1.max(x0 + 1) {
                self.set(px, py, c);
            }
        }
    }

    /// Draws `text` in the bitmap font; `vertical` text reads upwards.
    fn text(&mut self, x: f64, y: f64, text: &str, anchor: Anchor, vertical: bool) {
        let scale = PNG_FONT_SCALE;
        let advance = (font::ADVANCE * scale) as f64;
        let length = advance * text.chars().count() as f64 - scale as f64;
        let start = match anchor {
            Anchor::Start => 0.0,
            Anchor::Middle => -length / 2.0,
            Anchor::End => -length,
        };
        let glyph_h = (font::HEIGHT * scale) as i64;
        for (k, c) in text.chars().enumerate() {
            let along = (start + advance * k as f64).round() as i64;
            for (row, bits) in font::glyph(c).iter().enumerate() {
                for col in 0..font::WIDTH {
                    if bits & (1 << (font::WIDTH - 1 - col)) == 0 {
                        continue;
                    }
                    for dy in 0..scale {
                        for dx in 0..scale {
                            // Along the text and down from its top line.
                            let u = along + (col * scale + dx) as i64;
                            let v = (row * scale + dy) as i64 - glyph_h;
                            let (px, py) = if vertical {
                                (x.round() as i64 + v + glyph_h / 2, y.round() as i64 - u)
                            } else {
                                (x.round() as i64 + u, y.round() as i64 + v)
                            };
                            self.set(px, py, INK);
                        }
                    }
                }
            }
        }
    }
}

fn png(width: usize, height: usize, shapes: &[Shape]) -> Result<Vec<u8>> {
    let mut canvas = Canvas {
        width,
        height,
        pixels: vec![255; width * height * 3],
    };
    for shape in shapes {
        match shape {
            Shape::Rect { x, y, w, h, fill } => canvas.rect(*x, *y, *w, *h, *fill),
            Shape::Text {
                x,
                y,
                text,
                anchor,
                vertical,
            } => canvas.text(*x, *y, text, *anchor, *vertical),
        }
    }
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, width as u32, height as u32);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().context("cannot encode the PNG")?;
    writer
        .write_image_data(&canvas.pixels)
        .context("cannot encode the PNG")?;
    writer.finish().context("cannot encode the PNG")?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpigram_analysis::stats::PairTraffic;

    fn matrix(ranks: u32, pairs: &[((u32, u32), u64)]) -> CommMatrix {
        CommMatrix {
            ranks,
            pairs: pairs
                .iter()
                .map(|&(p, bytes)| (p, PairTraffic { bytes, messages: 1 }))
                .collect(),
            ..CommMatrix::default()
        }
    }

    #[test]
    fn the_scale_runs_from_light_to_dark_over_the_bytes_seen() {
        assert_eq!(colour(10, 10, 1000), SCALE[0]);
        assert_eq!(colour(1000, 10, 1000), SCALE[4]);
        assert_eq!(
            colour(100, 10, 1000),
            SCALE[2],
            "log scale: 100 is half way"
        );
        assert_eq!(colour(5, 5, 5), SCALE[4], "one value: the darkest");
        let lightness = |c: Rgb| c.iter().map(|&v| u32::from(v)).sum::<u32>();
        let mut last = u32::MAX;
        for b in [10, 30, 100, 300, 1000] {
            let l = lightness(colour(b, 10, 1000));
            assert!(l < last, "{b} bytes is darker than fewer");
            last = l;
        }
    }

    #[test]
    fn ticks_label_at_most_about_sixteen_ranks() {
        assert_eq!(tick_step(4), 1);
        assert_eq!(tick_step(16), 1);
        assert_eq!(tick_step(17), 2);
        assert_eq!(tick_step(64), 5);
        assert_eq!(tick_step(1000), 100);
    }

    #[test]
    fn cells_are_placed_by_sender_row_and_receiver_column() {
        let m = matrix(4, &[((0, 1), 100), ((3, 2), 10_000)]);
        let (_, _, shapes) = layout(&m).unwrap();
        let cells: Vec<_> = shapes
            .iter()
            .filter_map(|s| match s {
                Shape::Rect { x, y, w, fill, .. } if *w == 160.0 => Some((*x, *y, *fill)),
                _ => None,
            })
            .collect();
        assert_eq!(
            cells,
            [
                (80.0 + 160.0, 60.0, SCALE[0]),
                (80.0 + 320.0, 60.0 + 480.0, SCALE[4])
            ]
        );
        let labels: Vec<&str> = shapes
            .iter()
            .filter_map(|s| match s {
                Shape::Text { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        for wanted in ["0", "3", "receiver rank", "sender rank", "9.8 KiB", "100 B"] {
            assert!(labels.contains(&wanted), "{wanted} in {labels:?}");
        }
    }

    #[test]
    fn png_and_svg_are_written_by_extension() {
        let dir = tempfile::tempdir().unwrap();
        let m = matrix(3, &[((0, 1), 8), ((1, 2), 80), ((2, 0), 800)]);
        let png_path = dir.path().join("m.png");
        write(&m, &png_path).unwrap();
        let decoder = png::Decoder::new(std::io::BufReader::new(
            std::fs::File::open(&png_path).unwrap(),
        ));
        let reader = decoder.read_info().unwrap();
        let (w, h, _) = layout(&m).unwrap();
        assert_eq!(
            (reader.info().width, reader.info().height),
            (w as u32, h as u32)
        );
        let svg_path = dir.path().join("m.svg");
        write(&m, &svg_path).unwrap();
        let text = std::fs::read_to_string(&svg_path).unwrap();
        assert!(text.starts_with("<svg") && text.trim_end().ends_with("</svg>"));
        let cell = format!(
            r#"<rect x="80.00" y="{:.2}" width="213.00" height="213.00" fill="{}"/>"#,
            60.0 + 2.0 * 213.0,
            hex(SCALE[4])
        );
        assert!(
            text.contains(&cell),
            "the 800 B cell from rank 2 to 0: {cell}"
        );
        let err = write(&m, &dir.path().join("m.jpg")).unwrap_err();
        assert!(err.to_string().contains(".svg or .png"), "{err}");
    }
}
