//! `testkeeper bench --plot OUT.png RUN.json...`: throughput against sessions, one line per
//! server and pipeline depth, drawn from the JSON files earlier bench runs wrote.
//!
//! Text needs a TrueType font; plotters' pure-Rust `ab_glyph` renderer is fed DejaVu Sans
//! from Debian's fonts-dejavu-core, so no fontconfig or freetype is linked.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};
use serde_json::Value;

const FONTS: [&str; 2] =
    ["/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"];

/// Points of one line: (sessions, median ops/s).
type Series = BTreeMap<String, Vec<(f64, f64)>>;

/// Reads the medians out of bench JSON files, one series per target label and pipeline depth.
///
/// # Errors
/// A file that cannot be read or is not a bench report.
pub fn collect(inputs: &[PathBuf]) -> Result<Series, String> {
    let mut series = Series::new();
    for path in inputs {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let v: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        let cfg = &v["config"];
        let (sessions, pipeline) = (cfg["sessions"].as_f64(), cfg["pipeline"].as_u64());
        let (Some(sessions), Some(pipeline)) = (sessions, pipeline) else {
            return Err(format!("{}: no config.sessions / config.pipeline", path.display()));
        };
        for t in v["summary"]["targets"].as_array().into_iter().flatten() {
            let (Some(label), Some(ops)) = (t["label"].as_str(), t["ops_per_sec_median"].as_f64()) else { continue };
            series.entry(format!("{label}, pipeline {pipeline}")).or_default().push((sessions, ops));
        }
    }
    for points in series.values_mut() {
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    Ok(series)
}

/// Draws the plot.
///
/// # Errors
/// No font, no data, or a PNG that cannot be written.
pub fn draw(out: &Path, inputs: &[PathBuf]) -> Result<(), String> {
    let font =
        FONTS.iter().find_map(|f| std::fs::read(f).ok()).ok_or("no DejaVu font (apt-get install fonts-dejavu-core)")?;
    // plotters keeps registered fonts for the life of the process.
    let font: &'static [u8] = Box::leak(font.into_boxed_slice());
    register_font("sans-serif", FontStyle::Normal, font).map_err(|_| "cannot load the font".to_string())?;
    let series = collect(inputs)?;
    if series.is_empty() {
        return Err("no bench results in the inputs".into());
    }
    let max_x = series.values().flatten().map(|p| p.0).fold(1.0, f64::max) * 1.5;
    let max_y = series.values().flatten().map(|p| p.1).fold(1.0, f64::max) * 1.15;
    let e = |e: &dyn std::fmt::Display| format!("plot: {e}");
    let root = BitMapBackend::new(out, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let mut chart = ChartBuilder::on(&root)
        .caption("Throughput vs sessions (median of rounds)", ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(80)
        .build_cartesian_2d((0.8f64..max_x).log_scale(), 0f64..max_y)
        .map_err(|x| e(&x))?;
    chart
        .configure_mesh()
        .x_desc("sessions")
        .y_desc("ops/s")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{:.0}k", y / 1000.0))
        .draw()
        .map_err(|x| e(&x))?;
    for (i, (name, points)) in series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let style = ShapeStyle::from(color).stroke_width(if name.starts_with("testkeeper") { 3 } else { 2 });
        chart
            .draw_series(LineSeries::new(points.iter().copied(), style))
            .map_err(|x| e(&x))?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        chart.draw_series(points.iter().map(|p| Circle::new(*p, 4, color.filled()))).map_err(|x| e(&x))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|x| e(&x))?;
    root.present().map_err(|x| e(&x))?;
    Ok(())
}
