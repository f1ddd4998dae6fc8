//! One SVG chart of cost against N, drawn with plotters' SVG backend: ours and the baseline
//! as lines, N on a log scale, and the cost on a log scale where it spans a factor of ten.

use anyhow::{Result, anyhow};
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;

use super::report::ChartData;

const SIZE: (u32, u32) = (720, 440);

/// The chart as SVG text.
pub(crate) fn svg(chart: &ChartData) -> Result<String> {
    let all: Vec<(f64, f64)> = chart.ours.iter().chain(&chart.baseline).copied().collect();
    let (x_min, x_max) = bounds(all.iter().map(|p| p.0));
    let (y_min, y_max) = bounds(all.iter().map(|p| p.1));
    // A log axis needs positive values; Ns always are, costs almost always.
    let x_range = ((x_min / 2.0).max(0.5)..x_max * 2.0).log_scale();
    let mut text = String::new();
    if y_min > 0.0 && y_max / y_min >= 10.0 {
        draw(
            &mut text,
            chart,
            x_range,
            (y_min / 2.0..y_max * 2.0).log_scale(),
        )?;
    } else {
        draw(&mut text, chart, x_range, 0.0..y_max * 1.15)?;
    }
    Ok(text)
}

fn bounds(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (low, high) = values.fold((f64::INFINITY, 0.0_f64), |(low, high), v| {
        (low.min(v), high.max(v))
    });
    if low.is_finite() && high > 0.0 {
        (low, high)
    } else {
        (1.0, 1.0)
    }
}

fn draw<X, Y>(out: &mut String, chart: &ChartData, x: X, y: Y) -> Result<()>
where
    X: AsRangedCoord<Value = f64>,
    Y: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let failed = |e: &dyn std::fmt::Display| anyhow!("drawing chart {}: {e}", chart.file);
    let root = SVGBackend::with_string(out, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(|e| failed(&e))?;
    let mut plot = ChartBuilder::on(&root)
        .caption(&chart.title, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(72)
        .build_cartesian_2d(x, y)
        .map_err(|e| failed(&e))?;
    plot.configure_mesh()
        .x_desc("N")
        .x_label_formatter(&|n| format!("{n:.0}"))
        .y_desc(&chart.y_label)
        .draw()
        .map_err(|e| failed(&e))?;
    let lines = [
        ("ours", &chart.ours, BLUE),
        ("baseline", &chart.baseline, RED),
    ];
    for (name, points, color) in lines {
        if points.is_empty() {
            continue;
        }
        plot.draw_series(
            LineSeries::new(points.iter().copied(), color.stroke_width(2)).point_size(4),
        )
        .map_err(|e| failed(&e))?
        .label(name)
        .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], color.stroke_width(2)));
    }
    plot.configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|e| failed(&e))?;
    root.present().map_err(|e| failed(&e))?;
    Ok(())
}
