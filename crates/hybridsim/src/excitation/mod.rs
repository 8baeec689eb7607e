//! Ground-motion and load excitations: sampled time series, analytic time
//! functions, parsers for recorded accelerograms and a synthetic
//! (Kanai–Tajimi / Clough–Penzien) ground-motion generator.
//!
//! This module performs no file I/O: every parser takes the text of a file
//! as `&str`; reading the file is the caller's business.
//!
//! * [`TimeSeries`] — samples `(t_i, x_i)` with allocation-free linear
//!   interpolation ([`TimeSeries::value`]), zero before the first and after
//!   the last sample.
//! * [`TimeFunction`] — a recorded series, a windowed sine or a constant.
//! * [`parse_at2`] — PEER strong-motion database `.AT2` files (values in g).
//! * [`parse_two_column`] — plain `time value` text files.
//! * [`KanaiTajimi`] — seeded synthetic accelerograms (Kanai 1957,
//!   Tajimi 1960, with the Clough & Penzien 1975 high-pass filter).

mod at2;
mod synthetic;
mod time_series;

pub use at2::{parse_at2, At2Header};
pub use synthetic::KanaiTajimi;
pub use time_series::{TimeFunction, TimeSeries};

/// Standard acceleration of gravity, in m/s² (exact by definition:
/// 3rd CGPM, 1901; ISO 80000-3). Multiply accelerations given in g (as in
/// PEER `.AT2` files) by this constant to obtain m/s².
pub const STANDARD_GRAVITY: f64 = 9.80665;

/// Everything that can go wrong while building, reading or generating an
/// excitation. Messages are full sentences; where the problem comes from a
/// text file the 1-based line number is included.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum ExcitationError {
    /// The sampling interval is zero, negative or not a finite number.
    #[error("the time step must be a positive, finite number of seconds, but it is {dt}")]
    InvalidTimeStep {
        /// The rejected time step, in s.
        dt: f64,
    },

    /// A series (or a file) contains no samples at all.
    #[error("the time series has no samples")]
    Empty,

    /// A sample value is NaN or infinite.
    #[error("sample {index} (counting from 0) has the non-finite value {value}; every value must be a finite number")]
    NonFiniteValue {
        /// 0-based index of the sample.
        index: usize,
        /// The offending value.
        value: f64,
    },

    /// A sample time is NaN or infinite.
    #[error("sample {index} (counting from 0) has the non-finite time {time}; every time must be a finite number of seconds")]
    NonFiniteTime {
        /// 0-based index of the sample.
        index: usize,
        /// The offending time.
        time: f64,
    },

    /// `times` and `values` have different lengths.
    #[error("there are {times} times but {values} values; each time needs exactly one value")]
    LengthMismatch {
        /// Number of times given.
        times: usize,
        /// Number of values given.
        values: usize,
    },

    /// Sample times are not strictly increasing.
    #[error("sample {index} (counting from 0) is at t = {time} s, which is not later than the previous sample at t = {previous} s; times must be strictly increasing")]
    TimesNotIncreasing {
        /// 0-based index of the offending sample.
        index: usize,
        /// Time of the previous sample.
        previous: f64,
        /// Time of the offending sample.
        time: f64,
    },

    /// A series cannot be scaled to a target peak because all its samples
    /// are zero.
    #[error("cannot scale the record to a target peak because every sample is zero")]
    AllZero,

    /// The requested peak for [`TimeSeries::scaled_to_peak`] is not a
    /// positive finite number.
    #[error("the target peak must be a positive, finite number, but it is {value}")]
    InvalidTargetPeak {
        /// The rejected target peak.
        value: f64,
    },

    /// A parameter (e.g. of the synthetic ground-motion generator) is out
    /// of range.
    #[error("invalid {name} = {value}: it {requirement}")]
    InvalidParameter {
        /// Name of the parameter, e.g. `zeta_g`.
        name: &'static str,
        /// The rejected value.
        value: f64,
        /// What the value must satisfy, phrased to follow "it", e.g.
        /// "must be positive and finite".
        requirement: &'static str,
    },

    /// No line in the `.AT2` header holds the number of points and the time
    /// step.
    #[error("no header line with the number of points and the time step was found in the first {searched_lines} lines; line 4 of a PEER .AT2 file should read like `NPTS=  4000, DT= .01000 SEC` or `  4164    0.0100    NPTS, DT`")]
    MissingNptsDt {
        /// How many lines were searched.
        searched_lines: usize,
    },

    /// The `.AT2` header line that mentions NPTS could not be read.
    #[error("line {line}: {reason} (the line reads `{text}`)")]
    InvalidHeader {
        /// 1-based line number.
        line: usize,
        /// The (trimmed) line.
        text: String,
        /// What is wrong with it.
        reason: String,
    },

    /// The number of values in an `.AT2` file differs from its header.
    #[error("the header announces NPTS = {expected} values but the file contains {found} values")]
    CountMismatch {
        /// NPTS from the header.
        expected: usize,
        /// Number of values actually read.
        found: usize,
    },

    /// A token in a data line is not a number.
    #[error("line {line}: `{token}` is not a number")]
    InvalidNumber {
        /// 1-based line number.
        line: usize,
        /// The offending token.
        token: String,
    },

    /// A number in a data line overflows or is written as NaN/infinity.
    #[error("line {line}: `{token}` is not a finite number")]
    NonFiniteNumber {
        /// 1-based line number.
        line: usize,
        /// The offending token.
        token: String,
    },

    /// A line of a two-column file has the wrong number of columns.
    #[error("line {line}: expected 2 numbers (time, value), found {found}")]
    WrongColumnCount {
        /// 1-based line number.
        line: usize,
        /// Number of fields found.
        found: usize,
    },

    /// The time on a line of a two-column file does not increase.
    #[error("line {line}: the time {time} s is not later than the time {previous} s on the previous data line; times must be strictly increasing")]
    LineTimeNotIncreasing {
        /// 1-based line number.
        line: usize,
        /// Time on the previous data line.
        previous: f64,
        /// Time on this line.
        time: f64,
    },

    /// A text file contains no data lines.
    #[error("the file contains no data lines")]
    NoData,
}

/// Parses a plain two-column text file: one `time value` pair per line,
/// separated by whitespace and/or a comma (so CSV exports work).
///
/// * Blank lines and lines whose first non-blank character is `#` or `%`
///   are ignored (comments, as written by many tools and MATLAB).
/// * The first non-comment line may be a header (e.g. `time,accel`): it is
///   skipped if its first field is not a number. Any later non-numeric field
///   is an error.
/// * Times must be finite and strictly increasing; values must be finite.
///
/// Units are whatever the file uses; no conversion is done. The result is
/// built with [`TimeSeries::from_points`] (so it is reported as uniform by
/// [`TimeSeries::dt`] when the times are evenly spaced).
///
/// # Errors
/// [`ExcitationError::WrongColumnCount`], [`ExcitationError::InvalidNumber`],
/// [`ExcitationError::NonFiniteNumber`],
/// [`ExcitationError::LineTimeNotIncreasing`] (all with the 1-based line
/// number) and [`ExcitationError::NoData`].
pub fn parse_two_column(text: &str) -> Result<TimeSeries, ExcitationError> {
    let mut times = Vec::new();
    let mut values = Vec::new();
    let mut seen_content = false;
    for (idx, raw) in text.lines().enumerate() {
        let line_no = idx + 1;
        let line = raw.trim_start_matches('\u{feff}').trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with('%') {
            continue;
        }
        let first_content = !seen_content;
        seen_content = true;
        let fields: Vec<&str> = line
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|s| !s.is_empty())
            .collect();
        if fields.is_empty() {
            // A line made only of commas: treat it like a blank line.
            continue;
        }
        if first_content && fields[0].parse::<f64>().is_err() {
            // Header line such as `time value` or `t (s), a (g)`.
            continue;
        }
        if fields.len() != 2 {
            return Err(ExcitationError::WrongColumnCount {
                line: line_no,
                found: fields.len(),
            });
        }
        let t = parse_finite(fields[0], line_no)?;
        let x = parse_finite(fields[1], line_no)?;
        if let Some(&prev) = times.last() {
            if t <= prev {
                return Err(ExcitationError::LineTimeNotIncreasing {
                    line: line_no,
                    previous: prev,
                    time: t,
                });
            }
        }
        times.push(t);
        values.push(x);
    }
    if times.is_empty() {
        return Err(ExcitationError::NoData);
    }
    TimeSeries::from_points(times, values)
}

/// Parses one numeric field, rejecting NaN/infinity (which Rust's
/// `f64::from_str` would otherwise accept as `nan`, `inf`, `1e999`, ...).
fn parse_finite(token: &str, line: usize) -> Result<f64, ExcitationError> {
    let v: f64 = token.parse().map_err(|_| ExcitationError::InvalidNumber {
        line,
        token: token.to_string(),
    })?;
    if v.is_finite() {
        Ok(v)
    } else {
        Err(ExcitationError::NonFiniteNumber {
            line,
            token: token.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_column_basic_whitespace_and_comma() {
        let text = "# recorded at the lab\n\
                    time, accel\n\
                    \n\
                    0.0, 0.0\n\
                    0.1 1.5\n\
                    % matlab comment\n\
                    0.2,\t-2.0\n";
        let ts = parse_two_column(text).unwrap();
        assert_eq!(ts.times(), &[0.0, 0.1, 0.2]);
        assert_eq!(ts.values(), &[0.0, 1.5, -2.0]);
        assert_eq!(ts.value(0.1), 1.5);
        assert!((ts.value(0.05) - 0.75).abs() < 1e-12);
    }

    #[test]
    fn two_column_wrong_count_message() {
        let text = "0 0\n0.1 1\n0.2 2\n0.3 3\n0.4 4\n0.5 5\n0.6 6 7\n";
        let err = parse_two_column(text).unwrap_err();
        assert_eq!(err, ExcitationError::WrongColumnCount { line: 7, found: 3 });
        assert_eq!(
            err.to_string(),
            "line 7: expected 2 numbers (time, value), found 3"
        );
    }

    #[test]
    fn two_column_errors() {
        // Non-increasing time.
        let err = parse_two_column("0 1\n0.2 2\n0.2 3\n").unwrap_err();
        assert!(matches!(
            err,
            ExcitationError::LineTimeNotIncreasing { line: 3, .. }
        ));
        assert!(err.to_string().starts_with("line 3:"), "{err}");
        // Non-numeric after the first content line.
        let err = parse_two_column("0 1\n0.1 abc\n").unwrap_err();
        assert_eq!(
            err,
            ExcitationError::InvalidNumber {
                line: 2,
                token: "abc".into()
            }
        );
        // A header is only allowed once, as the first content line.
        let err = parse_two_column("t a\n0 1\nt a\n").unwrap_err();
        assert!(matches!(
            err,
            ExcitationError::InvalidNumber { line: 3, .. }
        ));
        // First line numeric time but junk value: error, not a header.
        let err = parse_two_column("0 x\n").unwrap_err();
        assert!(matches!(
            err,
            ExcitationError::InvalidNumber { line: 1, .. }
        ));
        // NaN / inf are rejected.
        let err = parse_two_column("0 1\n0.1 nan\n").unwrap_err();
        assert!(matches!(
            err,
            ExcitationError::NonFiniteNumber { line: 2, .. }
        ));
        let err = parse_two_column("0 1\n1e999 1\n").unwrap_err();
        assert!(matches!(
            err,
            ExcitationError::NonFiniteNumber { line: 2, .. }
        ));
        // Nothing but comments.
        assert_eq!(
            parse_two_column("# nothing\n\n").unwrap_err(),
            ExcitationError::NoData
        );
        assert_eq!(parse_two_column("").unwrap_err(), ExcitationError::NoData);
        assert_eq!(
            parse_two_column("time value\n").unwrap_err(),
            ExcitationError::NoData
        );
    }

    #[test]
    fn two_column_uniform_is_detected() {
        let mut text = String::new();
        for i in 0..101 {
            text.push_str(&format!("{} {}\n", i as f64 * 0.01, (i as f64).sin()));
        }
        let ts = parse_two_column(&text).unwrap();
        assert_eq!(ts.len(), 101);
        let dt = ts.dt().expect("evenly spaced file should be uniform");
        assert!((dt - 0.01).abs() < 1e-12);
        for (i, (&t, &x)) in ts.times().iter().zip(ts.values()).enumerate() {
            assert_eq!(ts.value(t), x, "sample {i}");
        }
    }

    #[test]
    fn two_column_crlf_and_nonuniform() {
        let ts = parse_two_column("0.5 1\r\n0.7 3\r\n1.5 -1\r\n").unwrap();
        assert_eq!(ts.dt(), None);
        assert_eq!(ts.value(0.4), 0.0);
        assert_eq!(ts.value(0.5), 1.0);
        assert!((ts.value(0.6) - 2.0).abs() < 1e-12);
        assert!((ts.value(1.1) - 1.0).abs() < 1e-12);
        assert_eq!(ts.value(1.5), -1.0);
        assert_eq!(ts.value(1.5000001), 0.0);
    }

    #[test]
    fn standard_gravity() {
        assert_eq!(STANDARD_GRAVITY, 9.80665);
    }
}
