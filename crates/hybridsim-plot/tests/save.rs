//! `save`/`save_grid`: formats by extension, awkward data, errors naming the path.

use hybridsim_plot::{save, save_grid, Axis, Chart, PlotError, Series};
use std::path::PathBuf;

fn tmp(name: &str) -> PathBuf {
    let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("hybridsim-plot");
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

fn axis(label: &str, log: bool) -> Axis {
    Axis {
        label: label.into(),
        log,
    }
}

fn sine() -> Series {
    let x: Vec<f64> = (0..500).map(|k| k as f64 * 0.01).collect();
    Series {
        name: "sine".into(),
        y: x.iter().map(|t| (6.0 * t).sin()).collect(),
        x,
    }
}

fn png_ok(p: &PathBuf) {
    let bytes = std::fs::read(p).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{}", p.display());
    assert!(
        bytes.len() > 5_000,
        "{}: {} bytes",
        p.display(),
        bytes.len()
    );
}

#[test]
fn png_and_svg_by_extension() {
    let chart = Chart {
        title: "a sine — ω = 6 rad/s".into(),
        x: axis("time [s]", false),
        y: axis("displacement [m]", false),
        series: vec![sine()],
    };
    let png = tmp("sine.png");
    let svg = tmp("sine.SVG");
    save(&chart, &png).unwrap();
    save(&chart, &svg).unwrap();
    png_ok(&png);
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("<svg"));
    // Labels are drawn as text with the units.
    assert!(text.contains("displacement [m]") && text.contains("time [s]"));
    assert!(text.contains("a sine — ω = 6 rad/s"));
}

#[test]
fn awkward_data_is_drawn_and_reported() {
    let mut with_nan = sine();
    with_nan.name = "with gaps".into();
    for k in (50..500).step_by(97) {
        with_nan.y[k] = f64::NAN;
    }
    with_nan.y[10] = f64::INFINITY;
    let constant = Series {
        name: "constant".into(),
        x: vec![0.0, 1.0, 2.0],
        y: vec![3.0; 3],
    };
    let empty = Series {
        name: "empty".into(),
        x: vec![],
        y: vec![],
    };
    let all_nan = Series {
        name: "all NaN".into(),
        x: vec![0.0, 1.0],
        y: vec![f64::NAN, f64::NAN],
    };
    let log_series = Series {
        name: "decay".into(),
        x: vec![1.0, 2.0, 3.0, 4.0, 5.0],
        y: vec![1.0, 0.1, 0.0, -0.5, 1e-3],
    };
    let charts = vec![
        Chart {
            title: "gaps".into(),
            x: axis("time [s]", false),
            y: axis("u [m]", false),
            series: vec![with_nan, empty, all_nan],
        },
        Chart {
            title: "constant".into(),
            x: axis("time [s]", false),
            y: axis("f [N]", false),
            series: vec![constant],
        },
        Chart {
            title: "log".into(),
            x: axis("step [-]", true),
            y: axis("error [-]", true),
            series: vec![log_series],
        },
        Chart {
            title: "nothing at all".into(),
            x: axis("x [-]", false),
            y: axis("y [-]", false),
            series: vec![],
        },
    ];
    let svg = tmp("grid.svg");
    save_grid(&charts, &svg).unwrap();
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(
        text.contains("decay (2 points ≤ 0 skipped on log axis)"),
        "log legend"
    );
    assert!(text.contains("empty (no data)"));
    assert!(text.contains("all NaN (no finite data)"));
    assert!(
        !text.contains("NaN,") && !text.contains("inf"),
        "non-finite coordinates written"
    );
    let png = tmp("grid.png");
    save_grid(&charts, &png).unwrap();
    png_ok(&png);
}

#[test]
fn errors_name_the_path() {
    let chart = Chart {
        title: "t".into(),
        x: axis("x", false),
        y: axis("y", false),
        series: vec![sine()],
    };
    let e = save(&chart, &tmp("chart.jpg")).unwrap_err();
    assert!(matches!(e, PlotError::Format { .. }));
    assert!(e.to_string().contains("chart.jpg") && e.to_string().contains(".png or .svg"));

    let missing = tmp("no/such/folder/chart.png");
    let e = save(&chart, &missing).unwrap_err().to_string();
    assert!(
        e.contains("no/such/folder") && e.contains("does not exist"),
        "{e}"
    );

    let mut bad = chart.clone();
    bad.series[0].y.pop();
    let e = save(&bad, &tmp("bad.png")).unwrap_err().to_string();
    assert!(
        e.contains("bad.png") && e.contains("series `sine`") && e.contains("500"),
        "{e}"
    );

    let e = save_grid(&[], &tmp("none.svg")).unwrap_err().to_string();
    assert!(e.contains("none.svg") && e.contains("no charts"), "{e}");
}
