//! Charts for hybridsim: time histories, hysteresis loops and energies written as PNG or SVG.
//!
//! This is the one plotting module of the project (`hybridsim plot`, `hybridsim analyze` and
//! later tools call it). It draws with `plotters` and an embedded DejaVu Sans font, so it needs
//! no fontconfig/freetype or system fonts (see `reference/crates.md` §8).
//!
//! A [`Chart`] is a title, two labelled axes (units in the label, e.g. `"displacement [m]"`) and
//! any number of [`Series`]. [`save`] writes one chart, [`save_grid`] stacks several vertically
//! in one image; the format follows the file extension (`.png` or `.svg`).
//!
//! Data handling:
//! - non-finite points (NaN, ±inf) are skipped and break the line there;
//! - on a logarithmic axis, points with a non-positive coordinate are skipped and the legend
//!   says how many (`"name (3 points ≤ 0 skipped on log axis)"`);
//! - a series without any drawable point is still listed in the legend (`"(no finite data)"`);
//! - an empty chart gets a unit range, a constant series a padded range.
//!
//! [`results`] reads a results folder (`results.csv` with `name[unit]` headers, or its binary
//! form `results.bin` ([`binary`]), `run.json`) and builds the standard figures of
//! `hybridsim plot`.

#![warn(missing_docs)]

pub mod binary;
pub mod results;

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::FontStyle;
use std::path::{Path, PathBuf};
use std::sync::Once;

/// One curve: `y` against `x` (same length).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Series {
    /// Legend entry.
    pub name: String,
    /// Abscissae.
    pub x: Vec<f64>,
    /// Ordinates.
    pub y: Vec<f64>,
}

/// An axis: its label (with the unit, e.g. `"displacement [m]"`) and scale.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Axis {
    /// Label including the unit in brackets.
    pub label: String,
    /// Logarithmic (base 10) scale.
    pub log: bool,
}

/// A chart: title, axes and curves.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Chart {
    /// Caption drawn above the plot area.
    pub title: String,
    /// Horizontal axis.
    pub x: Axis,
    /// Vertical axis.
    pub y: Axis,
    /// The curves, drawn in order with distinct colours.
    pub series: Vec<Series>,
}

/// Why a chart could not be written. Every variant names the output (or input) path.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// The extension is neither `.png` nor `.svg`.
    #[error("{path}: unsupported image format (the file name must end in .png or .svg)")]
    Format {
        /// The path.
        path: PathBuf,
    },
    /// The data cannot be drawn (e.g. `x` and `y` of a series differ in length).
    #[error("{path}: {reason}")]
    Data {
        /// The output path.
        path: PathBuf,
        /// What is wrong, naming the chart and series.
        reason: String,
    },
    /// Drawing or writing the image failed.
    #[error("{path}: cannot write the image: {reason}")]
    Write {
        /// The output path.
        path: PathBuf,
        /// The backend's message.
        reason: String,
    },
    /// Reading an input (results folder) failed.
    #[error("{path}: {reason}")]
    Read {
        /// The input path.
        path: PathBuf,
        /// What is wrong (line, column, reason).
        reason: String,
    },
}

/// Width of every image, pixels.
const WIDTH: u32 = 1100;
/// Height of a single chart, pixels.
const HEIGHT: u32 = 640;
/// Height of each chart of a grid, pixels.
const GRID_ROW_HEIGHT: u32 = 430;
/// Font family registered from the embedded DejaVu Sans.
const FONT: &str = "sans-serif";

/// Tableau-10 colours: distinct, readable on white.
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// Register the embedded DejaVu Sans under the family `sans-serif` (once per process).
fn register_fonts() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The bytes are a valid TrueType font compiled into the binary; a failure here would
        // only mean that text is not drawn, which the PNG check in the tests would reveal.
        let _ = plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular());
    });
}

#[derive(Clone, Copy, PartialEq)]
enum Format {
    Png,
    Svg,
}

fn format_of(path: &Path) -> Result<Format, PlotError> {
    match path
        .extension()
        .and_then(|e| e.to_str())
        .map(|e| e.to_ascii_lowercase())
        .as_deref()
    {
        Some("png") => Ok(Format::Png),
        Some("svg") => Ok(Format::Svg),
        _ => Err(PlotError::Format {
            path: path.to_path_buf(),
        }),
    }
}

fn check_folder(path: &Path) -> Result<(), PlotError> {
    if let Some(parent) = path.parent() {
        if !parent.as_os_str().is_empty() && !parent.is_dir() {
            return Err(PlotError::Write {
                path: path.to_path_buf(),
                reason: format!("the folder {} does not exist", parent.display()),
            });
        }
    }
    Ok(())
}

/// Write `chart` to `path`: PNG or SVG by the path's extension; errors name the path.
pub fn save(chart: &Chart, path: &Path) -> Result<(), PlotError> {
    save_grid(std::slice::from_ref(chart), path)
}

/// Several charts stacked vertically in one image (PNG or SVG by the path's extension).
pub fn save_grid(charts: &[Chart], path: &Path) -> Result<(), PlotError> {
    let format = format_of(path)?;
    if charts.is_empty() {
        return Err(PlotError::Data {
            path: path.to_path_buf(),
            reason: "no charts to draw".into(),
        });
    }
    let prepared = charts
        .iter()
        .map(prepare)
        .collect::<Result<Vec<_>, String>>()
        .map_err(|reason| PlotError::Data {
            path: path.to_path_buf(),
            reason,
        })?;
    check_folder(path)?;
    register_fonts();
    let height = if charts.len() == 1 {
        HEIGHT
    } else {
        GRID_ROW_HEIGHT * charts.len() as u32
    };
    let result = match format {
        Format::Png => draw_all(
            BitMapBackend::new(path, (WIDTH, height)).into_drawing_area(),
            charts,
            &prepared,
        ),
        Format::Svg => draw_all(
            SVGBackend::new(path, (WIDTH, height)).into_drawing_area(),
            charts,
            &prepared,
        ),
    };
    result.map_err(|reason| PlotError::Write {
        path: path.to_path_buf(),
        reason,
    })
}

/// Several charts stacked vertically, rendered as an SVG document in memory (for embedding,
/// e.g. inline in the HTML of `hybridsim report`). `row_height` is the height of each chart in
/// pixels (the width is that of the image files). Errors name `label` as the path.
pub fn svg_string(charts: &[Chart], row_height: u32, label: &str) -> Result<String, PlotError> {
    let path = PathBuf::from(label);
    if charts.is_empty() {
        return Err(PlotError::Data {
            path,
            reason: "no charts to draw".into(),
        });
    }
    let prepared = charts
        .iter()
        .map(prepare)
        .collect::<Result<Vec<_>, String>>()
        .map_err(|reason| PlotError::Data {
            path: path.clone(),
            reason,
        })?;
    register_fonts();
    let height = row_height.max(200) * charts.len() as u32;
    let mut out = String::new();
    {
        let area = SVGBackend::with_string(&mut out, (WIDTH, height)).into_drawing_area();
        draw_all(area, charts, &prepared).map_err(|reason| PlotError::Write {
            path: path.clone(),
            reason,
        })?;
    }
    Ok(out)
}

/// A series reduced to drawable segments, with its legend text.
struct PreparedSeries {
    label: String,
    segments: Vec<Vec<(f64, f64)>>,
}

struct Prepared {
    series: Vec<PreparedSeries>,
    x_range: (f64, f64),
    y_range: (f64, f64),
}

fn prepare(chart: &Chart) -> Result<Prepared, String> {
    let mut series = Vec::with_capacity(chart.series.len());
    let mut xr = (f64::INFINITY, f64::NEG_INFINITY);
    let mut yr = (f64::INFINITY, f64::NEG_INFINITY);
    for s in &chart.series {
        if s.x.len() != s.y.len() {
            return Err(format!(
                "chart `{}`, series `{}`: x has {} values but y has {}",
                chart.title,
                s.name,
                s.x.len(),
                s.y.len()
            ));
        }
        let mut segments = Vec::new();
        let mut current: Vec<(f64, f64)> = Vec::new();
        let mut non_positive = 0usize;
        for (&x, &y) in s.x.iter().zip(&s.y) {
            let finite = x.is_finite() && y.is_finite();
            let positive = (!chart.x.log || x > 0.0) && (!chart.y.log || y > 0.0);
            if finite && !positive {
                non_positive += 1;
            }
            if finite && positive {
                current.push((x, y));
                xr = (xr.0.min(x), xr.1.max(x));
                yr = (yr.0.min(y), yr.1.max(y));
            } else if !current.is_empty() {
                segments.push(std::mem::take(&mut current));
            }
        }
        if !current.is_empty() {
            segments.push(current);
        }
        let mut label = s.name.clone();
        if segments.is_empty() {
            label.push_str(if s.x.is_empty() {
                " (no data)"
            } else {
                " (no finite data)"
            });
        } else if non_positive > 0 {
            label.push_str(&format!(
                " ({non_positive} point{} ≤ 0 skipped on log axis)",
                if non_positive == 1 { "" } else { "s" }
            ));
        }
        series.push(PreparedSeries { label, segments });
    }
    Ok(Prepared {
        series,
        x_range: padded(xr, chart.x.log, 0.02),
        y_range: padded(yr, chart.y.log, 0.05),
    })
}

/// A drawable range from the data extremes: unit range when empty, padded when constant,
/// `margin` (fraction of the span) added on both sides otherwise.
fn padded((lo, hi): (f64, f64), log: bool, margin: f64) -> (f64, f64) {
    if log {
        if lo > hi {
            return (1.0, 10.0);
        }
        if lo == hi {
            return (lo / 2.0, hi * 2.0);
        }
        let f = (hi / lo).powf(margin);
        return (lo / f, hi * f);
    }
    if lo > hi {
        return (0.0, 1.0);
    }
    if lo == hi {
        let pad = if lo == 0.0 { 1.0 } else { 0.1 * lo.abs() };
        return (lo - pad, hi + pad);
    }
    let pad = margin * (hi - lo);
    let (a, b) = (lo - pad, hi + pad);
    if a.is_finite() && b.is_finite() {
        (a, b)
    } else {
        (lo, hi)
    }
}

/// Tick label: up to four significant digits, scientific notation for very small or large values.
/// A tick label on an axis spanning `span`: a value within 1e-9 of the span of zero is the zero
/// that round-off moved (a tick at `-1.69e-21` on a ±0.01 axis reads `0`).
fn tick_on(v: f64, span: f64) -> String {
    if span.is_finite() && span > 0.0 && v.abs() <= 1e-9 * span {
        return "0".into();
    }
    tick(v)
}

fn tick(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        return "0".into();
    }
    if !(1e-3..1e5).contains(&a) {
        let s = format!("{v:.2e}");
        // 1.50e-4 → 1.5e-4
        if let Some((m, e)) = s.split_once('e') {
            let m = m.trim_end_matches('0').trim_end_matches('.');
            return format!("{m}e{e}");
        }
        return s;
    }
    let digits = (3 - a.log10().floor() as i32).clamp(0, 8) as usize;
    let s = format!("{v:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

fn draw_all<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    charts: &[Chart],
    prepared: &[Prepared],
) -> Result<(), String> {
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let areas = root.split_evenly((charts.len(), 1));
    for ((area, chart), data) in areas.iter().zip(charts).zip(prepared) {
        draw_chart(area, chart, data)?;
    }
    root.present().map_err(|e| e.to_string())
}

fn draw_chart<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    chart: &Chart,
    data: &Prepared,
) -> Result<(), String> {
    let (x0, x1) = data.x_range;
    let (y0, y1) = data.y_range;
    match (chart.x.log, chart.y.log) {
        (false, false) => draw_in(area, chart, data, x0..x1, y0..y1),
        (true, false) => draw_in(area, chart, data, (x0..x1).log_scale(), y0..y1),
        (false, true) => draw_in(area, chart, data, x0..x1, (y0..y1).log_scale()),
        (true, true) => draw_in(
            area,
            chart,
            data,
            (x0..x1).log_scale(),
            (y0..y1).log_scale(),
        ),
    }
}

fn draw_in<DB, X, Y>(
    area: &DrawingArea<DB, Shift>,
    chart: &Chart,
    data: &Prepared,
    x_range: X,
    y_range: Y,
) -> Result<(), String>
where
    DB: DrawingBackend,
    X: AsRangedCoord<Value = f64>,
    Y: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let mut ctx = ChartBuilder::on(area)
        .caption(&chart.title, (FONT, 22))
        .margin(12)
        .x_label_area_size(48)
        .y_label_area_size(86)
        .build_cartesian_2d(x_range, y_range)
        .map_err(err)?;
    let (x_span, y_span) = (
        (data.x_range.1 - data.x_range.0).abs(),
        (data.y_range.1 - data.y_range.0).abs(),
    );
    let fmt_x = |v: &f64| tick_on(*v, x_span);
    let fmt_y = |v: &f64| tick_on(*v, y_span);
    ctx.configure_mesh()
        .x_desc(chart.x.label.as_str())
        .y_desc(chart.y.label.as_str())
        .axis_desc_style((FONT, 17))
        .label_style((FONT, 14))
        .x_label_formatter(&fmt_x)
        .y_label_formatter(&fmt_y)
        .light_line_style(RGBColor(235, 235, 235))
        .bold_line_style(RGBColor(205, 205, 205))
        .draw()
        .map_err(err)?;
    let mut labelled = false;
    for (i, s) in data.series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        // One-pixel lines: plotters joins wider polylines with unlimited miters, which draw
        // long spikes at the sharp reversals of hysteresis loops.
        let style = ShapeStyle::from(&color).stroke_width(1);
        if s.segments.is_empty() {
            if !s.label.is_empty() {
                ctx.draw_series(LineSeries::new(std::iter::empty::<(f64, f64)>(), style))
                    .map_err(err)?
                    .label(s.label.as_str())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                    });
                labelled = true;
            }
            continue;
        }
        for (k, seg) in s.segments.iter().enumerate() {
            let drawn = ctx
                .draw_series(LineSeries::new(seg.iter().copied(), style))
                .map_err(err)?;
            if k == 0 && !s.label.is_empty() {
                drawn.label(s.label.as_str()).legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                });
                labelled = true;
            }
        }
    }
    if labelled {
        ctx.configure_series_labels()
            .label_font((FONT, 14))
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(160, 160, 160))
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(err)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_short() {
        assert_eq!(tick(0.0), "0");
        assert_eq!(tick(1.0), "1");
        assert_eq!(tick(0.25), "0.25");
        assert_eq!(tick(1234.0), "1234");
        assert_eq!(tick(12.5), "12.5");
        assert_eq!(tick(1.5e-4), "1.5e-4");
        assert_eq!(tick(-2.0e6), "-2e6");
    }

    /// Issue 18: a tick that round-off moved off zero reads `0`; a small value on a small axis
    /// keeps its digits.
    #[test]
    fn round_off_zero_ticks_read_zero() {
        assert_eq!(tick_on(-1.69e-21, 0.02), "0");
        assert_eq!(tick_on(3.0e-12, 0.02), "0");
        assert_eq!(tick_on(1.5e-4, 0.02), "1.5e-4");
        assert_eq!(tick_on(2.0e-12, 1.0e-11), "2e-12");
    }

    #[test]
    fn ranges_are_padded() {
        assert_eq!(
            padded((f64::INFINITY, f64::NEG_INFINITY), false, 0.05),
            (0.0, 1.0)
        );
        assert_eq!(padded((0.0, 0.0), false, 0.05), (-1.0, 1.0));
        assert_eq!(padded((2.0, 2.0), false, 0.0), (1.8, 2.2));
        assert_eq!(padded((1.0, 1.0), true, 0.05), (0.5, 2.0));
        let (a, b) = padded((0.0, 10.0), false, 0.1);
        assert!((a + 1.0).abs() < 1e-12 && (b - 11.0).abs() < 1e-12);
    }
}
