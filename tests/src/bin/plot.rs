//! `overlap-plot`: draws benchmark results as SVG for `docs/BENCHMARKS.md`.
//!
//! `overlap-plot strip RESULTS.csv OUT.svg [TITLE]`: one point a process,
//! for result files with the columns `run,round,build,scene,gpu_ns` (lines
//! starting with `#` are comments; `ci/gpu-side-by-side` writes such a file
//! into `$OUT/results.csv`). Each scene is a column of the chart; in it,
//! each build (other than `native`) a lane of points; the value is the
//! process's GPU time over the median of the same run's `native` processes
//! of that scene, on a logarithmic axis, so that a strategy's two speeds
//! per process show as two clusters.
//!
//! `overlap-plot lines DATA.csv OUT.svg TITLE Y-LABEL [TARGET]`: a line a
//! series, for files with the columns `series,x,y` (`x` a size, drawn on a
//! base-2 logarithmic axis; several rows of one series and x are drawn as
//! their points and a line through their median, the mean of the middle two
//! where their count is even), and a dashed horizontal
//! line at TARGET where given (`ci/bench` draws the density map's fraction
//! of its ideal speedup across sizes with it).

use plotters::prelude::*;
use std::collections::BTreeMap;

struct Row {
    run: String,
    build: String,
    scene: String,
    ns: f64,
}

fn parse(text: &str) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with("run,") {
            continue;
        }
        // The build may be quoted (it can hold commas).
        let (head, rest) = line.split_once(",\"").ok_or(format!("line {}: no quoted build", i + 1))?;
        let (build, tail) = rest.split_once("\",").ok_or(format!("line {}: unterminated build", i + 1))?;
        let run = head.split(',').next().unwrap_or_default().to_string();
        let (scene, ns) = tail.split_once(',').ok_or(format!("line {}: no value", i + 1))?;
        let ns: f64 = ns.parse().map_err(|e| format!("line {}: {e}", i + 1))?;
        rows.push(Row { run, build: build.to_string(), scene: scene.to_string(), ns });
    }
    Ok(rows)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// (scene, build) -> ratios to native, scenes and builds in order of first appearance.
type Ratios = (Vec<String>, Vec<String>, BTreeMap<(usize, usize), Vec<f64>>);

fn ratios(rows: &[Row]) -> Result<Ratios, String> {
    let mut natives: BTreeMap<(&str, &str), Vec<f64>> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.build == "native") {
        natives.entry((&r.run, &r.scene)).or_default().push(r.ns);
    }
    let natives: BTreeMap<(&str, &str), f64> = natives.into_iter().map(|(k, v)| (k, median(v))).collect();
    let (mut scenes, mut builds) = (Vec::<String>::new(), Vec::<String>::new());
    let mut out: BTreeMap<(usize, usize), Vec<f64>> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.build != "native") {
        let native = natives
            .get(&(r.run.as_str(), r.scene.as_str()))
            .ok_or(format!("run {} has no native process of {}", r.run, r.scene))?;
        let s = scenes.iter().position(|s| *s == r.scene).unwrap_or_else(|| {
            scenes.push(r.scene.clone());
            scenes.len() - 1
        });
        let b = builds.iter().position(|b| *b == r.build).unwrap_or_else(|| {
            builds.push(r.build.clone());
            builds.len() - 1
        });
        out.entry((s, b)).or_default().push(r.ns / native);
    }
    Ok((scenes, builds, out))
}

fn strip(input: &str, output: &str, title: &str) -> Result<(), String> {
    let text = std::fs::read_to_string(input).map_err(|e| format!("{input}: {e}"))?;
    let (scenes, builds, points) = ratios(&parse(&text)?)?;
    if points.is_empty() {
        return Err(format!("{input}: no process other than native"));
    }
    let all = points.values().flatten();
    let (lo, hi) = all.fold((f64::MAX, 0f64), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    let root = SVGBackend::new(output, (1100, 560)).into_drawing_area();
    let err = |e: DrawingAreaErrorKind<_>| format!("{output}: {e:?}");
    root.fill(&WHITE).map_err(err)?;
    let lanes = builds.len() as f64;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        // A logarithmic axis drawn as log10 of the ratio (so that its labels are evenly spread), and room on the
        // right for the legend.
        .build_cartesian_2d(0f64..scenes.len() as f64 + 1.7, (lo * 0.8).log10()..(hi * 1.25).log10())
        .map_err(err)?;
    let names = scenes.clone();
    chart
        .configure_mesh()
        .x_labels((scenes.len() + 2) * 2 + 1)
        .x_label_formatter(&|x| {
            let i = x.floor() as usize;
            if (x - i as f64 - 0.5).abs() < 0.01 && i < names.len() {
                names.get(i).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_labels(24)
        .y_label_formatter(&|y| format!("{:.2}", 10f64.powf(*y)))
        .y_desc("GPU time / native (median of the run)")
        .disable_x_mesh()
        .draw()
        .map_err(err)?;
    for (b, build) in builds.iter().enumerate() {
        let colour = Palette99::pick(b).to_rgba();
        let mut series = Vec::new();
        for ((s, bb), values) in &points {
            if *bb != b {
                continue;
            }
            for (k, v) in values.iter().enumerate() {
                // The build's lane in the scene's column, processes spread a little across it.
                let x = *s as f64 + (b as f64 + 0.5) / lanes + (k as f64 % 5.0 - 2.0) * 0.008;
                series.push((x, v.log10()));
            }
        }
        chart
            .draw_series(series.into_iter().map(|p| Circle::new(p, 4, colour.filled())))
            .map_err(err)?
            .label(build.as_str())
            .legend(move |(x, y)| Circle::new((x, y), 4, colour.filled()));
    }
    legend(&mut chart, SeriesLabelPosition::UpperRight, output)?;
    root.present().map_err(err)
}

/// The chart's series labels in a framed box at `at`.
fn legend<'a, 'b: 'a>(
    chart: &mut ChartContext<
        'a,
        SVGBackend<'b>,
        Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
    >,
    at: SeriesLabelPosition,
    output: &str,
) -> Result<(), String> {
    chart
        .configure_series_labels()
        .position(at)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| format!("{output}: {e:?}"))
}

/// The median, the mean of the two middle values where their count is even.
fn middle(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 0 {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    } else {
        v[n / 2]
    }
}

/// (series, x, y) rows of a `series,x,y` file.
fn parse_lines(text: &str) -> Result<Vec<(String, f64, f64)>, String> {
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with("series,") {
            continue;
        }
        let mut it = line.rsplitn(3, ',');
        let (y, x, series) = (it.next(), it.next(), it.next());
        let (Some(y), Some(x), Some(series)) = (y, x, series) else {
            return Err(format!("line {}: not series,x,y", i + 1));
        };
        let num = |v: &str| v.trim().parse::<f64>().map_err(|e| format!("line {}: {e}", i + 1));
        rows.push((series.trim().to_string(), num(x)?, num(y)?));
    }
    Ok(rows)
}

fn lines(input: &str, output: &str, title: &str, y_desc: &str, target: Option<f64>) -> Result<(), String> {
    let text = std::fs::read_to_string(input).map_err(|e| format!("{input}: {e}"))?;
    let rows = parse_lines(&text)?;
    if rows.iter().any(|r| r.1 <= 0.0) {
        return Err(format!("{input}: x must be positive (a logarithmic axis)"));
    }
    let mut series: Vec<String> = Vec::new();
    for r in &rows {
        if !series.contains(&r.0) {
            series.push(r.0.clone());
        }
    }
    if series.is_empty() {
        return Err(format!("{input}: no rows"));
    }
    let xs = rows.iter().map(|r| r.1.log2());
    let (x0, x1) = xs.fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
    let ys = rows.iter().map(|r| r.2).chain(target);
    let (y0, y1) = ys.fold((f64::MAX, f64::MIN), |(a, b), y| (a.min(y), b.max(y)));
    let pad = ((y1 - y0) * 0.15).max(0.02);
    let root = SVGBackend::new(output, (900, 520)).into_drawing_area();
    let err = |e: DrawingAreaErrorKind<_>| format!("{output}: {e:?}");
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(x0 - 0.3..x1 + 0.3, (y0 - pad)..(y1 + pad))
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_labels((x1 - x0).round() as usize + 3)
        .x_label_formatter(&|x| {
            if (x - x.round()).abs() < 0.01 {
                format!("{}", 2f64.powf(x.round()))
            } else {
                String::new()
            }
        })
        .x_desc("size (pixels a side)")
        .y_desc(y_desc)
        .draw()
        .map_err(err)?;
    if let Some(t) = target {
        chart
            .draw_series(DashedLineSeries::new(vec![(x0 - 0.3, t), (x1 + 0.3, t)], 6, 4, BLACK.into()))
            .map_err(err)?
            .label(format!("target {t}"))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], BLACK));
    }
    for (k, name) in series.iter().enumerate() {
        let colour = Palette99::pick(k).to_rgba();
        let mine: Vec<&(String, f64, f64)> = rows.iter().filter(|r| r.0 == *name).collect();
        let mut at: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
        for r in &mine {
            at.entry(r.1.to_bits()).or_default().push(r.2);
        }
        let mut path: Vec<(f64, f64)> = at.into_iter().map(|(x, v)| (f64::from_bits(x).log2(), middle(v))).collect();
        path.sort_by(|a, b| a.0.total_cmp(&b.0));
        chart.draw_series(mine.iter().map(|r| Circle::new((r.1.log2(), r.2), 3, colour.filled()))).map_err(err)?;
        chart
            .draw_series(LineSeries::new(path, colour.stroke_width(2)))
            .map_err(err)?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], colour.stroke_width(2)));
    }
    legend(&mut chart, SeriesLabelPosition::LowerRight, output)?;
    root.present().map_err(err)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let r = match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["strip", input, output] => strip(input, output, "one point a process"),
        ["strip", input, output, title] => strip(input, output, title),
        ["lines", input, output, title, y] => lines(input, output, title, y, None),
        ["lines", input, output, title, y, target] => match target.parse() {
            Ok(t) => lines(input, output, title, y, Some(t)),
            Err(e) => Err(format!("target {target}: {e}")),
        },
        _ => {
            Err("usage: overlap-plot strip RESULTS.csv OUT.svg [TITLE] | lines DATA.csv OUT.svg TITLE Y-LABEL [TARGET]"
                .into())
        }
    };
    if let Err(e) = r {
        eprintln!("overlap-plot: {e}");
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_are_to_the_same_runs_native_median() {
        let text = "# c\nrun,round,build,scene,gpu_ns\n1,1,\"native\",a,10\n1,2,\"native\",a,30\n1,1,\"x,y\",a,40\n2,1,\"native\",a,100\n2,1,\"x,y\",a,100\n";
        let (scenes, builds, points) = ratios(&parse(text).unwrap()).unwrap();
        assert_eq!((scenes, builds), (vec!["a".to_string()], vec!["x,y".to_string()]));
        // Run 1's native median of {10, 30} is 30 (upper median); run 2's is 100.
        assert_eq!(points[&(0, 0)], vec![40.0 / 30.0, 1.0]);
        assert!(ratios(&parse("1,1,\"x\",a,5\n").unwrap()).is_err(), "no native to divide by");
    }

    #[test]
    fn lines_rows_keep_commas_in_the_series_name() {
        let rows = parse_lines("# c\nseries,x,y\nstatic,512,0.9\ntwo views, multiview,1024,0.8\n").unwrap();
        assert_eq!(rows, vec![("static".into(), 512.0, 0.9), ("two views, multiview".into(), 1024.0, 0.8)]);
        assert_eq!((middle(vec![3.0, 1.0]), middle(vec![5.0, 1.0, 2.0])), (2.0, 2.0));
        assert!(parse_lines("static,512\n").is_err());
        assert!(parse_lines("static,big,0.9\n").is_err());
    }
}
