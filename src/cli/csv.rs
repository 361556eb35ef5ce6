//! The command's CSV files: number rows in, trajectories out (full `f64` precision).

use std::io::Write;
use std::path::Path;

use phyz::State;

use super::CliError;

/// Rows of comma-separated numbers (no header); blank lines are rows with no numbers.
pub fn read_rows(path: &Path) -> Result<Vec<Vec<f64>>, CliError> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.lines()
        .enumerate()
        .map(|(i, line)| {
            line.split(',')
                .map(str::trim)
                .filter(|f| !f.is_empty())
                .map(|f| {
                    f.parse::<f64>()
                        .ok()
                        .filter(|x| x.is_finite())
                        .ok_or_else(|| format!("{}:{}: `{f}` is not a finite number", path.display(), i + 1).into())
                })
                .collect()
        })
        .collect()
}

/// The single row of a one-row file, of `len` numbers.
pub fn read_vector(path: &Path, len: usize, what: &str) -> Result<Vec<f64>, CliError> {
    let rows = read_rows(path)?;
    match rows.as_slice() {
        [row] if row.len() == len => Ok(row.clone()),
        [row] => Err(format!("{}: {what} needs {len} numbers, got {}", path.display(), row.len()).into()),
        _ => Err(format!("{}: {what} must be one row, found {}", path.display(), rows.len()).into()),
    }
}

/// Writes the trajectory header `time,qpos0,…,qvel0,…`.
pub fn write_header(out: &mut impl Write, nq: usize, nv: usize) -> std::io::Result<()> {
    let names = std::iter::once("time".to_string())
        .chain((0..nq).map(|i| format!("qpos{i}")))
        .chain((0..nv).map(|i| format!("qvel{i}")));
    writeln!(out, "{}", names.collect::<Vec<_>>().join(","))
}

/// Writes one state as a row; `{}` prints the shortest decimal that reads back to the same f64.
pub fn write_state(out: &mut impl Write, state: &State<f64>) -> std::io::Result<()> {
    let values = std::iter::once(state.time).chain(state.qpos.iter().copied()).chain(state.qvel.iter().copied());
    writeln!(out, "{}", values.map(|x| x.to_string()).collect::<Vec<_>>().join(","))
}

/// A trajectory [`write_header`] and [`write_state`] wrote: states of a model with `nq`
/// positions and `nv` velocities, made by `state` from each row's time, positions and velocities.
pub fn read_trajectory(
    path: &Path,
    nq: usize,
    nv: usize,
    state: impl Fn(f64, &[f64], &[f64]) -> State<f64>,
) -> Result<Vec<State<f64>>, CliError> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut lines = text.lines().enumerate().filter(|(_, line)| !line.trim().is_empty());
    match lines.next() {
        Some((_, header)) if header.starts_with("time,") || header == "time" => {}
        _ => return Err(format!("{}: not a trajectory (its first line is not `time,qpos0,…`)", path.display()).into()),
    }
    lines
        .map(|(i, line)| {
            let row: Vec<f64> = line
                .split(',')
                .map(|f| f.trim().parse::<f64>().ok().filter(|x| x.is_finite()))
                .collect::<Option<_>>()
                .ok_or_else(|| format!("{}:{}: not a row of finite numbers", path.display(), i + 1))?;
            if row.len() != 1 + nq + nv {
                return Err(format!(
                    "{}:{}: {} numbers, the model's states have {}",
                    path.display(),
                    i + 1,
                    row.len(),
                    1 + nq + nv
                )
                .into());
            }
            Ok(state(row[0], &row[1..1 + nq], &row[1 + nq..]))
        })
        .collect()
}
