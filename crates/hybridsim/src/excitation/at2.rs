//! Reader for PEER strong-motion database `.AT2` acceleration files.
//!
//! Format (PEER Strong Motion Database, 2000; PEER NGA-West2 database,
//! Ancheta et al. 2014, PEER Report 2013/03, <https://ngawest2.berkeley.edu>):
//!
//! ```text
//! PEER NGA STRONG MOTION DATABASE RECORD              <- organization
//! Kobe Japan, 1/16/1995, KJMA, 0                      <- event, date, station, component
//! ACCELERATION TIME SERIES IN UNITS OF G              <- quantity and units
//! NPTS=   7500, DT=   .0200 SEC                       <- NGA-West2 style, or
//!   4164    0.0100    NPTS, DT                        <- older NGA style
//!   -.1416764E-03  -.1418977E-03  -.1421037E-03 ...   <- values, row by row
//! ```
//!
//! Values are usually written five per line in Fortran `E15.7` format;
//! fixed-width Fortran output can run fields together (`-.12E-02-.34E-02`,
//! `0.123-0.456`), which this reader splits: a `+`/`-` sign that does not
//! follow an exponent letter (`E`, `e`, `D`, `d`) starts a new number.

use super::{ExcitationError, TimeSeries};

/// Number of leading lines searched for the `NPTS`/`DT` line (it is line 4
/// in PEER files; some redistributed copies add a few comment lines).
const HEADER_SEARCH_LINES: usize = 20;

/// Header information of a PEER `.AT2` record.
#[derive(Clone, Debug, PartialEq)]
pub struct At2Header {
    /// Event, date, station and component, e.g.
    /// `Kobe Japan, 1/16/1995, KJMA, 0` (line 2 of the file, trimmed).
    pub description: String,
    /// Units as stated in the header (`G` in `... IN UNITS OF G`); `g` is
    /// assumed when the header does not say (PEER convention for `.AT2`).
    pub units: String,
    /// Number of points announced by the header (`NPTS`); equal to the
    /// number of values read.
    pub npts: usize,
    /// Time step in s (`DT`).
    pub dt: f64,
}

impl At2Header {
    /// `true` if the stated units are g (standard gravity), the PEER
    /// convention for acceleration records. Multiply by
    /// [`super::STANDARD_GRAVITY`] to obtain m/s².
    pub fn is_in_g(&self) -> bool {
        self.units.eq_ignore_ascii_case("g")
    }
}

/// Parses the text of a PEER `.AT2` file (NGA-West2 `NPTS=..., DT=...`
/// header or the older `npts dt NPTS, DT` header) into a uniform
/// [`TimeSeries`] (first sample at t = 0) and its [`At2Header`].
///
/// Values are returned as written, i.e. in g for PEER records
/// (see [`At2Header::units`]).
///
/// The `NPTS`/`DT` line is expected as line 4 but is searched for in the
/// first 20 lines; the lines before it form the header, every
/// whitespace-separated token after it is a value. Never panics, whatever
/// the input.
///
/// # Errors
/// * [`ExcitationError::MissingNptsDt`] if no header line holds NPTS and DT;
/// * [`ExcitationError::InvalidHeader`] (with the line) if a line mentions
///   NPTS but its numbers cannot be read or DT is not positive;
/// * [`ExcitationError::InvalidNumber`] / [`ExcitationError::NonFiniteNumber`]
///   (with the line and the token) for a bad value;
/// * [`ExcitationError::CountMismatch`] if the number of values is not NPTS.
pub fn parse_at2(text: &str) -> Result<(TimeSeries, At2Header), ExcitationError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let lines: Vec<&str> = text.lines().collect();

    let mut header_line = None;
    let mut first_bad: Option<ExcitationError> = None;
    for (i, line) in lines.iter().enumerate().take(HEADER_SEARCH_LINES) {
        match parse_npts_dt_line(line) {
            None => {}
            Some(Ok((npts, dt))) => {
                header_line = Some((i, npts, dt));
                break;
            }
            Some(Err(reason)) if first_bad.is_none() => {
                first_bad = Some(ExcitationError::InvalidHeader {
                    line: i + 1,
                    text: line.trim().to_string(),
                    reason,
                });
            }
            Some(Err(_)) => {}
        }
    }
    let (hidx, npts, dt) = match header_line {
        Some(found) => found,
        None => {
            return Err(first_bad.unwrap_or(ExcitationError::MissingNptsDt {
                searched_lines: lines.len().min(HEADER_SEARCH_LINES),
            }))
        }
    };

    let header_lines = &lines[..hidx];
    let description = match header_lines.len() {
        0 => String::new(),
        1 => header_lines[0].trim().to_string(),
        _ => header_lines[1].trim().to_string(),
    };
    let units = header_lines
        .iter()
        .find_map(|l| units_from_line(l))
        .unwrap_or_else(|| "g".to_string());

    // Do not trust NPTS for the allocation size (a corrupt header could ask
    // for terabytes); each value needs at least two bytes of text.
    let mut values = Vec::with_capacity(npts.min(text.len() / 2 + 1));
    for (i, line) in lines.iter().enumerate().skip(hidx + 1) {
        let line_no = i + 1;
        for token in line
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|s| !s.is_empty())
        {
            for piece in split_run_together(token) {
                values.push(parse_value(piece, token, line_no)?);
            }
        }
    }
    if values.len() != npts {
        return Err(ExcitationError::CountMismatch {
            expected: npts,
            found: values.len(),
        });
    }
    let series = TimeSeries::uniform(dt, values)?;
    Ok((
        series,
        At2Header {
            description,
            units,
            npts,
            dt,
        },
    ))
}

/// `None` if the line does not mention NPTS; otherwise the parsed
/// `(npts, dt)` or the reason it cannot be read.
fn parse_npts_dt_line(line: &str) -> Option<Result<(usize, f64), String>> {
    // ASCII upper-casing keeps byte offsets, so indices found in `upper`
    // are valid (char-boundary) indices into `line`, too.
    let upper = line.to_ascii_uppercase();
    let pos = upper.find("NPTS")?;
    Some(parse_npts_dt_at(&upper, pos))
}

fn parse_npts_dt_at(upper: &str, pos: usize) -> Result<(usize, f64), String> {
    let after = &upper[pos + 4..];
    let (npts_tok, dt_tok) = if let Some(rest) = after.trim_start().strip_prefix('=') {
        // NGA-West2 style: `NPTS=  5590, DT=   .0050 SEC`.
        let npts_tok = leading_number(rest);
        let dt_tok = find_keyword_value(upper, "DT")
            .ok_or_else(|| "found NPTS but no `DT=` value on the same line".to_string())?;
        (npts_tok, dt_tok)
    } else {
        // Older NGA style: `  4164    0.0100    NPTS, DT`.
        let before: Vec<&str> = upper[..pos]
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|s| !s.is_empty())
            .collect();
        if before.len() < 2 || !after.contains("DT") {
            return Err(
                "found NPTS but could not read the number of points and the time step \
                 (expected `NPTS= <n>, DT= <dt> SEC` or `<n> <dt> NPTS, DT`)"
                    .to_string(),
            );
        }
        (before[before.len() - 2], before[before.len() - 1])
    };
    let npts = parse_count(npts_tok)
        .ok_or_else(|| format!("NPTS must be a whole number of points, found `{npts_tok}`"))?;
    let dt = parse_fortran_f64(dt_tok)
        .filter(|dt| dt.is_finite() && *dt > 0.0)
        .ok_or_else(|| format!("DT must be a positive number of seconds, found `{dt_tok}`"))?;
    Ok((npts, dt))
}

/// The number after `KEY` `=` (spaces allowed around `=`), where `KEY` is
/// not preceded by a letter or digit.
fn find_keyword_value<'a>(upper: &'a str, key: &str) -> Option<&'a str> {
    let bytes = upper.as_bytes();
    let mut from = 0;
    while let Some(off) = upper[from..].find(key) {
        let start = from + off;
        let end = start + key.len();
        from = end;
        if start > 0 && bytes[start - 1].is_ascii_alphanumeric() {
            continue;
        }
        if let Some(rest) = upper[end..].trim_start().strip_prefix('=') {
            return Some(leading_number(rest));
        }
    }
    None
}

/// Leading numeric-looking run of `s` after spaces: digits, `.`, signs and
/// exponent letters (`.01000` in `.01000 SEC`, `4000` in `4000, DT`).
fn leading_number(s: &str) -> &str {
    let s = s.trim_start();
    let end = s
        .find(|c: char| {
            !(c.is_ascii_digit() || matches!(c, '.' | '+' | '-' | 'E' | 'e' | 'D' | 'd'))
        })
        .unwrap_or(s.len());
    &s[..end]
}

fn parse_count(tok: &str) -> Option<usize> {
    if let Ok(n) = tok.parse::<usize>() {
        return Some(n);
    }
    // Tolerate `4000.` or `4.0E+03`.
    let v = parse_fortran_f64(tok)?;
    if v >= 0.0 && v.fract() == 0.0 && v < 9.0e15 {
        Some(v as usize)
    } else {
        None
    }
}

/// Parses a Fortran real (`.5`, `-.12E-02`, `1.0D+00`); `None` for
/// anything else, including `nan`/`inf`, which Rust would accept.
fn parse_fortran_f64(tok: &str) -> Option<f64> {
    if tok.is_empty()
        || !tok.bytes().all(|b| {
            b.is_ascii_digit() || matches!(b, b'.' | b'+' | b'-' | b'E' | b'e' | b'D' | b'd')
        })
    {
        return None;
    }
    if tok.bytes().any(|b| b == b'D' || b == b'd') {
        tok.replace(['D', 'd'], "E").parse().ok()
    } else {
        tok.parse().ok()
    }
}

/// Splits a whitespace-free token into numbers that were written without a
/// separating space: a `+`/`-` that is not the first character and does
/// not follow an exponent letter starts a new number.
fn split_run_together(token: &str) -> impl Iterator<Item = &str> {
    let bytes = token.as_bytes();
    let mut start = 0;
    let mut i = 1;
    std::iter::from_fn(move || {
        if start >= bytes.len() {
            return None;
        }
        while i < bytes.len() {
            let b = bytes[i];
            let prev = bytes[i - 1];
            if matches!(b, b'+' | b'-') && !matches!(prev, b'E' | b'e' | b'D' | b'd') {
                // `+`/`-` are ASCII, so `i` is a char boundary.
                let piece = &token[start..i];
                start = i;
                i += 1;
                return Some(piece);
            }
            i += 1;
        }
        let piece = &token[start..];
        start = bytes.len();
        Some(piece)
    })
}

fn parse_value(piece: &str, token: &str, line: usize) -> Result<f64, ExcitationError> {
    match parse_fortran_f64(piece) {
        Some(v) if v.is_finite() => Ok(v),
        Some(_) => Err(ExcitationError::NonFiniteNumber {
            line,
            token: token.to_string(),
        }),
        None => Err(ExcitationError::InvalidNumber {
            line,
            token: token.to_string(),
        }),
    }
}

/// Units stated in a header line: the text after `UNITS OF` / `UNITS ARE`
/// / `UNITS:` up to the next `,` `;` or `. `, without brackets, e.g. `G`
/// from `ACCELERATION TIME HISTORY IN UNITS OF G. FILTER POINTS: ...` and
/// `g` from `The units are (g)`.
fn units_from_line(line: &str) -> Option<String> {
    let upper = line.to_ascii_uppercase();
    let (pos, key_len) = ["UNITS OF", "UNITS ARE", "UNITS:", "UNITS ="]
        .iter()
        .find_map(|k| upper.find(k).map(|p| (p, k.len())))?;
    let rest = &line[pos + key_len..];
    let mut end = rest.len();
    for pat in [",", ";", ". "] {
        if let Some(p) = rest.find(pat) {
            end = end.min(p);
        }
    }
    let unit = rest[..end]
        .trim()
        .trim_end_matches('.')
        .trim_matches(|c| matches!(c, '(' | ')' | '[' | ']'))
        .trim();
    if unit.is_empty() {
        None
    } else {
        Some(unit.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use std::path::PathBuf;

    const WEST2: &str = "PEER NGA STRONG MOTION DATABASE RECORD\n\
        Loma Prieta, 10/18/1989, Corralitos, 0\n\
        ACCELERATION TIME SERIES IN UNITS OF G\n\
        NPTS=      7, DT=   .0050 SEC,                          \n\
        \x20  .1394908E-02   .1401720E-02  -.1408560E-02   .1415407E-02   .1422306E-02\n\
        \x20 -.1429218E-02   .5000000E+00\n\
        \x20                                 \n";

    const OLD_NGA: &str = "PEER NGA STRONG MOTION DATABASE RECORD\n\
        IMPERIAL VALLEY 05/19/40 0439, EL CENTRO ARRAY #9, 180\n\
        ACCELERATION TIME HISTORY IN UNITS OF G\n\
        \x20    6    0.0100    NPTS, DT\n\
        \x20  .1E-01 -.2E-01 .3E-01\n\
        \x20  -.4E-01 .5E-01 -.6E-01";

    #[test]
    fn nga_west2_header() {
        let (ts, h) = parse_at2(WEST2).unwrap();
        assert_eq!(h.npts, 7);
        assert_eq!(h.dt, 0.005);
        assert_eq!(h.description, "Loma Prieta, 10/18/1989, Corralitos, 0");
        assert_eq!(h.units, "G");
        assert!(h.is_in_g());
        assert_eq!(ts.len(), 7);
        assert_eq!(ts.dt(), Some(0.005));
        assert_eq!(ts.values()[0], 0.001394908);
        assert_eq!(ts.values()[2], -0.00140856);
        assert_eq!(ts.values()[6], 0.5);
        assert_eq!(ts.value(0.03), 0.5);
        assert_eq!(ts.peak_abs(), 0.5);
    }

    #[test]
    fn old_nga_header() {
        let (ts, h) = parse_at2(OLD_NGA).unwrap();
        assert_eq!(h.npts, 6);
        assert_eq!(h.dt, 0.01);
        assert_eq!(
            h.description,
            "IMPERIAL VALLEY 05/19/40 0439, EL CENTRO ARRAY #9, 180"
        );
        assert_eq!(ts.values(), &[0.01, -0.02, 0.03, -0.04, 0.05, -0.06]);
    }

    #[test]
    fn header_spacing_variants() {
        for line in [
            "NPTS=  4000, DT= .01000 SEC",
            "NPTS =   4000 , DT =   .010 SEC ,   ",
            "npts=4000,dt=0.01 sec",
            "NPTS= 4000, DT= 1.0E-02 SEC, SRC= something",
            "NPTS= 4000, DT= 1.0D-02 SEC",
            "  4000    0.0100    NPTS, DT",
            "4000 .01 NPTS,DT",
            "4000, .01, NPTS, DT, extra words",
        ] {
            let r = parse_npts_dt_line(line).unwrap();
            assert_eq!(r, Ok((4000, 0.01)), "{line}");
        }
        assert!(parse_npts_dt_line("ACCELERATION TIME SERIES").is_none());
    }

    #[test]
    fn run_together_fields_are_split() {
        let text = "org\nev\nACCELERATION IN UNITS OF G\nNPTS= 8, DT= .02 SEC\n\
                    -.12E-02-.34E-02+.5E+01\n0.123-0.456 1.0D-01-2.0d+00 7.5\n";
        let (ts, _) = parse_at2(text).unwrap();
        assert_eq!(
            ts.values(),
            &[-0.0012, -0.0034, 5.0, 0.123, -0.456, 0.1, -2.0, 7.5]
        );
        let pieces: Vec<&str> = split_run_together("1E-2-3e+4+5-6").collect();
        assert_eq!(pieces, ["1E-2", "-3e+4", "+5", "-6"]);
        let pieces: Vec<&str> = split_run_together("-1").collect();
        assert_eq!(pieces, ["-1"]);
    }

    #[test]
    fn count_mismatch_reports_both_counts() {
        let text = WEST2.replace("NPTS=      7", "NPTS=      9");
        let err = parse_at2(&text).unwrap_err();
        assert_eq!(
            err,
            ExcitationError::CountMismatch {
                expected: 9,
                found: 7
            }
        );
        let msg = err.to_string();
        assert!(msg.contains('9') && msg.contains('7'), "{msg}");
        let text = WEST2.replace("NPTS=      7", "NPTS=      3");
        assert_eq!(
            parse_at2(&text).unwrap_err(),
            ExcitationError::CountMismatch {
                expected: 3,
                found: 7
            }
        );
    }

    #[test]
    fn bad_token_reports_line_and_token() {
        let text = WEST2.replace("-.1429218E-02", "-.14292x8E-02");
        let err = parse_at2(&text).unwrap_err();
        assert_eq!(
            err,
            ExcitationError::InvalidNumber {
                line: 6,
                token: "-.14292x8E-02".into()
            }
        );
        assert_eq!(err.to_string(), "line 6: `-.14292x8E-02` is not a number");
        for bad in ["nan", "inf", "Infinity", "1e", ".", "-"] {
            let text = WEST2.replace(".5000000E+00", bad);
            assert!(
                matches!(
                    parse_at2(&text),
                    Err(ExcitationError::InvalidNumber { line: 6, .. })
                ),
                "{bad}"
            );
        }
        let text = WEST2.replace(".5000000E+00", ".5E+999");
        assert!(matches!(
            parse_at2(&text),
            Err(ExcitationError::NonFiniteNumber { line: 6, .. })
        ));
    }

    #[test]
    fn missing_or_bad_header() {
        let text = "PEER\nsomething\nACCELERATION IN G\n 0.1 0.2 0.3\n";
        let err = parse_at2(text).unwrap_err();
        assert_eq!(err, ExcitationError::MissingNptsDt { searched_lines: 4 });
        assert!(err.to_string().contains("NPTS"), "{err}");

        let text = WEST2.replace("DT=   .0050", "DX=   .0050");
        let err = parse_at2(&text).unwrap_err();
        assert!(
            matches!(err, ExcitationError::InvalidHeader { line: 4, .. }),
            "{err:?}"
        );
        assert!(err.to_string().starts_with("line 4: "), "{err}");

        let text = WEST2.replace("DT=   .0050", "DT=   0.0");
        let err = parse_at2(&text).unwrap_err();
        assert!(matches!(
            err,
            ExcitationError::InvalidHeader { line: 4, .. }
        ));
        assert!(err.to_string().contains("DT must be a positive"), "{err}");

        let text = WEST2.replace("NPTS=      7", "NPTS=  seven");
        let err = parse_at2(&text).unwrap_err();
        assert!(
            err.to_string().contains("NPTS must be a whole number"),
            "{err}"
        );

        assert_eq!(
            parse_at2("").unwrap_err(),
            ExcitationError::MissingNptsDt { searched_lines: 0 }
        );
        // NPTS = 0 with no data: no samples.
        let text = "a\nb\nc\nNPTS= 0, DT= .01 SEC\n";
        assert_eq!(parse_at2(text).unwrap_err(), ExcitationError::Empty);
    }

    #[test]
    fn crlf_bom_and_units_variants() {
        let text = format!("\u{feff}{}", WEST2.replace('\n', "\r\n"));
        let (ts, h) = parse_at2(&text).unwrap();
        assert_eq!(ts.len(), 7);
        assert_eq!(h.units, "G");
        assert_eq!(
            units_from_line("ACCELERATION TIME HISTORY IN UNITS OF G. FILTER POINTS: HP=0.2 Hz"),
            Some("G".into())
        );
        assert_eq!(units_from_line("The units are (g)"), Some("g".into()));
        assert_eq!(
            units_from_line("VELOCITY TIME SERIES IN UNITS OF CM/S"),
            Some("CM/S".into())
        );
        assert_eq!(units_from_line("no units here"), None);
        let no_units = WEST2.replace("IN UNITS OF G", "");
        let (_, h) = parse_at2(&no_units).unwrap();
        assert_eq!(h.units, "g");
    }

    /// Property-style robustness check: random bytes, random mutations and
    /// truncations of valid files must give `Ok` or `Err`, never a panic.
    #[test]
    fn never_panics_on_garbage() {
        let mut rng = ChaCha8Rng::seed_from_u64(0xA72);
        let alphabet = b"0123456789.+-eEdD \n\r\t,=NPTSDTsecG#%\xff";
        let seeds = [WEST2, OLD_NGA];
        for iter in 0..4000 {
            let len = (rng.next_u32() % 300) as usize;
            let mut bytes = vec![0u8; len];
            if iter % 2 == 0 {
                rng.fill_bytes(&mut bytes);
            } else {
                for b in &mut bytes {
                    *b = alphabet[(rng.next_u32() as usize) % alphabet.len()];
                }
            }
            let text = String::from_utf8_lossy(&bytes);
            let _ = parse_at2(&text);
            let _ = crate::excitation::parse_two_column(&text);

            // Mutate a valid record: overwrite a few bytes, then truncate.
            let mut rec = seeds[iter % 2].as_bytes().to_vec();
            for _ in 0..(rng.next_u32() % 4) {
                let k = (rng.next_u32() as usize) % rec.len();
                rec[k] = alphabet[(rng.next_u32() as usize) % alphabet.len()];
            }
            let cut = (rng.next_u32() as usize) % (rec.len() + 1);
            rec.truncate(cut);
            let text = String::from_utf8_lossy(&rec);
            let _ = parse_at2(&text);
            let _ = crate::excitation::parse_two_column(&text);
        }
        // A header asking for an absurd number of points must not make the
        // parser try to allocate it.
        let text = "a\nb\nc\nNPTS= 18446744073709551615, DT= .01 SEC\n0.1\n";
        assert!(matches!(
            parse_at2(text),
            Err(ExcitationError::CountMismatch { .. })
        ));
        let text = "a\nb\nc\nNPTS= 99999999999999999999999, DT= .01 SEC\n0.1\n";
        assert!(matches!(
            parse_at2(text),
            Err(ExcitationError::InvalidHeader { line: 4, .. })
        ));
    }

    // ----- real records ---------------------------------------------------

    fn ground_motion_dir() -> Option<PathBuf> {
        let dir = match std::env::var_os("HYBRIDSIM_GROUND_MOTIONS") {
            Some(d) => PathBuf::from(d),
            None => PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../../shared/data/ground-motions"),
        };
        if dir.is_dir() {
            Some(dir)
        } else {
            eprintln!(
                "SKIPPED: ground-motion folder {} not found (set HYBRIDSIM_GROUND_MOTIONS)",
                dir.display()
            );
            None
        }
    }

    struct Expected {
        file: &'static str,
        npts: usize,
        dt: f64,
        pga: f64,
        peak_index: usize,
        peak_positive: bool,
        max: f64,
        min: f64,
        description: &'static str,
    }

    /// Reference values from README.md / check.py in the data folder.
    const RECORDS: [Expected; 4] = [
        Expected {
            file: "ElCentro1940_NS_PEER_IELC180.AT2",
            npts: 4000,
            dt: 0.01,
            pga: 0.3129,
            peak_index: 215,
            peak_positive: false,
            max: 0.2956,
            min: -0.3129,
            description: "IMPERIAL VALLEY 5/19/40 0439, EL CENTRO ARRAY #9, 180 (USGS STATION 117)",
        },
        Expected {
            file: "ElCentro1940_NS_Peknold_OpenSees_elCentro.AT2",
            npts: 1559,
            dt: 0.02,
            pga: 0.3188,
            peak_index: 101,
            peak_positive: false,
            max: 0.2984,
            min: -0.3188,
            description: "1559 points at equal spacing of 0.02 sec Points are listed in the format of 8F10.5, i.e., 8 points across in a row with 5 decimal places",
        },
        Expected {
            file: "Kobe1995_KJMA000_RSN1106_KOBE_KJM000.AT2",
            npts: 7500,
            dt: 0.02,
            pga: 0.8342,
            peak_index: 426,
            peak_positive: false,
            max: 0.5904,
            min: -0.8342,
            description: "Kobe Japan, 1/16/1995, KJMA, 0",
        },
        Expected {
            file: "LomaPrieta1989_Corralitos000_RSN753_LOMAP_CLS000.AT2",
            npts: 7995,
            dt: 0.005,
            pga: 0.6447,
            peak_index: 525,
            peak_positive: true,
            max: 0.6447,
            min: -0.5112,
            description: "Loma Prieta, 10/18/1989, Corralitos, 0",
        },
    ];

    #[test]
    fn real_records_match_reference() {
        let Some(dir) = ground_motion_dir() else {
            return;
        };
        for e in &RECORDS {
            let path = dir.join(e.file);
            let text = match std::fs::read_to_string(&path) {
                Ok(t) => t,
                Err(err) => {
                    eprintln!("SKIPPED: cannot read {}: {err}", path.display());
                    continue;
                }
            };
            let (ts, h) = parse_at2(&text).unwrap_or_else(|err| panic!("{}: {err}", e.file));
            assert_eq!(h.npts, e.npts, "{}", e.file);
            assert_eq!(ts.len(), e.npts, "{}", e.file);
            assert_eq!(h.dt, e.dt, "{}", e.file);
            assert_eq!(ts.dt(), Some(e.dt), "{}", e.file);
            assert!(h.is_in_g(), "{}: units {}", e.file, h.units);
            assert_eq!(h.description, e.description, "{}", e.file);
            // PGA, max and min to the 4 decimals printed by check.py.
            let round4 = |x: f64| (x * 1e4).round() / 1e4;
            assert_eq!(round4(ts.peak_abs()), e.pga, "{} PGA", e.file);
            assert_eq!(ts.peak_index(), e.peak_index, "{} PGA index", e.file);
            let peak = ts.values()[e.peak_index];
            assert_eq!(peak > 0.0, e.peak_positive, "{} PGA sign", e.file);
            let max = ts.values().iter().cloned().fold(f64::MIN, f64::max);
            let min = ts.values().iter().cloned().fold(f64::MAX, f64::min);
            assert_eq!(round4(max), e.max, "{} max", e.file);
            assert_eq!(round4(min), e.min, "{} min", e.file);
            // Interpolation returns the exact sample at its time and the
            // series ends at (npts - 1) * dt.
            assert_eq!(ts.value(e.peak_index as f64 * e.dt), peak, "{}", e.file);
            let end = (e.npts - 1) as f64 * e.dt;
            assert!((ts.end_time() - end).abs() < 1e-9, "{}", e.file);
            assert_eq!(ts.value(ts.end_time() + e.dt), 0.0);
            // In m/s^2 the PGA matches README's figure (3 decimals).
            let mut si = ts.clone();
            si.scale(crate::excitation::STANDARD_GRAVITY);
            let pga_si = (si.peak_abs() * 1e3).round() / 1e3;
            let readme_si = match e.file {
                f if f.starts_with("ElCentro1940_NS_PEER") => 3.068,
                f if f.starts_with("ElCentro1940_NS_Peknold") => 3.127,
                f if f.starts_with("Kobe") => 8.181,
                _ => 6.323,
            };
            assert_eq!(pga_si, readme_si, "{} PGA in m/s^2", e.file);

            // Truncated copies of the real file never panic and report a
            // count mismatch (or a header problem) instead.
            for cut in [0, 10, 80, 200, 300, text.len() / 2, text.len() - 1] {
                let mut cut = cut.min(text.len());
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                let _ = parse_at2(&text[..cut]);
            }
        }
    }

    #[test]
    fn real_records_truncated_data_is_a_count_mismatch() {
        let Some(dir) = ground_motion_dir() else {
            return;
        };
        let path = dir.join(RECORDS[2].file);
        let Ok(text) = std::fs::read_to_string(&path) else {
            eprintln!("SKIPPED: cannot read {}", path.display());
            return;
        };
        // Drop the last data line (5 values).
        let trimmed = text.trim_end();
        let cut = trimmed.rfind('\n').unwrap();
        let err = parse_at2(&trimmed[..cut]).unwrap_err();
        assert_eq!(
            err,
            ExcitationError::CountMismatch {
                expected: 7500,
                found: 7495
            }
        );
    }
}
