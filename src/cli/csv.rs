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
