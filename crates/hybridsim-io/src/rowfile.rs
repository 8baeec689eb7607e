//! Results files that only ever hold whole rows, and know how many are on disk.
//!
//! A [`RowFile`] formats rows with the number format of every results file
//! ([`crate::csv::push_row`]) into its own buffer of whole lines and hands that buffer to
//! its [`Storage`] in one go when it is full or when asked to flush. When the storage refuses
//! part-way (a full disk, an I/O error), the file is cut back to the end of the last whole row
//! that reached it, so that a reader never finds half a row, and the count of rows on disk
//! stays exact. Where the bytes go is a [`WriterFactory`]: a plain file by default, a writer
//! that fails after N bytes in the tests of the write-error path.

use std::io::{self, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::Arc;

/// Bytes buffered before they are handed to the storage.
const BUFFER_BYTES: usize = 1 << 16;

/// Where the bytes of a results file go.
pub trait Storage: Write + Send {
    /// Cut the file back to its first `len` bytes (drops a partial row after a failed write)
    /// and continue writing from there.
    fn truncate(&mut self, len: u64) -> io::Result<()>;
    /// Force the written bytes to stable storage.
    fn sync(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Storage for std::fs::File {
    fn truncate(&mut self, len: u64) -> io::Result<()> {
        self.set_len(len)?;
        self.seek(SeekFrom::Start(len)).map(|_| ())
    }
    fn sync(&mut self) -> io::Result<()> {
        self.sync_all()
    }
}

/// Opens the storage of a results file (created, or emptied if it exists).
pub type WriterFactory = Arc<dyn Fn(&Path) -> io::Result<Box<dyn Storage>> + Send + Sync>;

/// The default [`WriterFactory`]: a plain file.
pub fn file_factory() -> WriterFactory {
    Arc::new(|path: &Path| Ok(Box::new(std::fs::File::create(path)?) as Box<dyn Storage>))
}

/// How the rows of a results file are spelled (`[output] format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RowFormat {
    /// CSV text: a header line of `name[unit]` cells, then one line of shortest round-trip
    /// numbers per row ([`crate::csv::push_row`]).
    #[default]
    Csv,
    /// The binary results layout of [`hybridsim_plot::binary`]: a self-describing header,
    /// then each row as little-endian f64 values.
    Binary,
}

/// A results file of whole rows (CSV text or the binary layout, [`RowFormat`]): a header,
/// then one row after the other, each row tagged with a number (the coarse step of a results
/// row) so that the last one on disk is known.
pub struct RowFile {
    out: Box<dyn Storage>,
    format: RowFormat,
    /// Values a row (the header's cells), checked for every binary row.
    columns: usize,
    buf: Vec<u8>,
    /// Tag of every row in `buf`, in order.
    tags: Vec<u64>,
    /// End (byte offset in `buf`, exclusive) of every row in `buf`, in order.
    ends: Vec<usize>,
    num: zmij::Buffer,
    /// Bytes on disk (whole lines only).
    on_disk: u64,
    rows_on_disk: u64,
    last_tag: Option<u64>,
}

impl RowFile {
    /// Open `path` through `factory` and write `header` (comma-separated names) to it at once,
    /// as CSV text.
    pub fn create(factory: &WriterFactory, path: &Path, header: &str) -> io::Result<Self> {
        Self::create_as(factory, path, header, RowFormat::Csv)
    }

    /// Open `path` through `factory` and write `header` (comma-separated `name[unit]` cells)
    /// to it at once, in `format`. The header goes straight to the storage, not through the
    /// row buffer: a wide model's header (about 25 MB for 7 × 10⁵ columns) would otherwise
    /// grow the buffer to its size for the whole run (issue 20). If the storage refuses part
    /// of it, the file is cut back to empty and the error returned.
    pub fn create_as(
        factory: &WriterFactory,
        path: &Path,
        header: &str,
        format: RowFormat,
    ) -> io::Result<Self> {
        let columns = if header.is_empty() {
            0
        } else {
            header.split(',').count()
        };
        let mut f = Self {
            out: factory(path)?,
            format,
            columns,
            buf: Vec::with_capacity(BUFFER_BYTES + 4096),
            tags: Vec::new(),
            ends: Vec::new(),
            num: zmij::Buffer::new(),
            on_disk: 0,
            rows_on_disk: 0,
            last_tag: None,
        };
        match format {
            RowFormat::Csv => f.write_header(&[header.as_bytes(), b"\n"])?,
            RowFormat::Binary => {
                let cells: Vec<&str> = header.split(',').filter(|c| !c.is_empty()).collect();
                let bytes = hybridsim_plot::binary::encode_header(&cells);
                drop(cells);
                f.write_header(&[&bytes])?;
            }
        }
        Ok(f)
    }

    /// Write the header `pieces` straight to the storage and flush it; on an error the file is
    /// cut back to empty (never part of a header) and the error returned.
    fn write_header(&mut self, pieces: &[&[u8]]) -> io::Result<()> {
        let written = pieces
            .iter()
            .try_for_each(|p| self.out.write_all(p))
            .and_then(|()| self.out.flush());
        if let Err(e) = written {
            if let Err(t) = self.out.truncate(0) {
                return Err(io::Error::new(
                    e.kind(),
                    format!("{e}; and the partial header could not be cut: {t}"),
                ));
            }
            return Err(e);
        }
        self.on_disk = pieces.iter().map(|p| p.len() as u64).sum();
        Ok(())
    }

    /// The format of the rows.
    pub fn format(&self) -> RowFormat {
        self.format
    }

    /// Append one row tagged `tag`, spelled straight into the write buffer (no line buffer,
    /// no allocation once the buffer has grown to a row); written out when the buffer is
    /// full. A binary row must have the header's number of values.
    pub fn write_row(&mut self, row: &[f64], tag: u64) -> io::Result<()> {
        match self.format {
            RowFormat::Csv => crate::csv::push_row(&mut self.buf, row, &mut self.num),
            RowFormat::Binary => {
                if row.len() != self.columns {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!(
                            "a row of {} values for a header of {} columns",
                            row.len(),
                            self.columns
                        ),
                    ));
                }
                for x in row {
                    self.buf.extend_from_slice(&x.to_le_bytes());
                }
            }
        }
        self.ends.push(self.buf.len());
        self.tags.push(tag);
        if self.buf.len() >= BUFFER_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    /// Append one CSV row tagged `tag` whose first numbers are already spelled: `spelled` is
    /// the text of the row's first columns ([`crate::csv::push_fields`], no comma after it,
    /// empty for none), `rest` the values of the others. The line is the one [`Self::write_row`]
    /// writes for the whole row, byte for byte; the results writer of `run` has a wide row's
    /// first columns spelled on the stepping thread (issue 20). A binary file takes no text.
    pub fn write_spelled_row(&mut self, spelled: &[u8], rest: &[f64], tag: u64) -> io::Result<()> {
        if spelled.is_empty() {
            return self.write_row(rest, tag);
        }
        if self.format != RowFormat::Csv {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a spelled row for a binary results file",
            ));
        }
        self.buf.extend_from_slice(spelled);
        crate::csv::push_fields(&mut self.buf, rest, true, &mut self.num);
        self.buf.push(b'\n');
        self.ends.push(self.buf.len());
        self.tags.push(tag);
        if self.buf.len() >= BUFFER_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    /// Hand every buffered row to the storage. On an error the file is cut back to the last
    /// whole row that reached it, the rows that did not are dropped, and the error is
    /// returned (with the cut's own failure, if any, in its text).
    pub fn flush(&mut self) -> io::Result<()> {
        let mut done = 0;
        let mut failure = None;
        while done < self.buf.len() {
            match self.out.write(&self.buf[done..]) {
                Ok(0) => {
                    failure = Some(io::Error::new(
                        io::ErrorKind::WriteZero,
                        "the storage accepted no more bytes",
                    ));
                    break;
                }
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        if failure.is_none() {
            if let Err(e) = self.out.flush() {
                // Unknown how much of the buffer reached the file: keep only what did before.
                failure = Some(e);
                done = 0;
            }
        }
        // Whole rows that reached the storage.
        let rows = self.ends.partition_point(|end| *end <= done);
        let kept = match (&failure, rows) {
            (None, _) => self.buf.len(),
            (Some(_), 0) => 0,
            (Some(_), r) => self.ends[r - 1],
        };
        if rows > 0 {
            self.last_tag = Some(self.tags[rows - 1]);
        }
        self.rows_on_disk += rows as u64;
        self.on_disk += kept as u64;
        self.buf.clear();
        self.tags.clear();
        self.ends.clear();
        match failure {
            None => Ok(()),
            Some(e) => {
                if kept < done {
                    if let Err(t) = self.out.truncate(self.on_disk) {
                        return Err(io::Error::new(
                            e.kind(),
                            format!(
                                "{e}; and the partial row after byte {} could not be cut: {t}",
                                self.on_disk
                            ),
                        ));
                    }
                }
                Err(e)
            }
        }
    }

    /// Rows entirely on disk.
    pub fn rows_on_disk(&self) -> u64 {
        self.rows_on_disk
    }

    /// Tag of the last row entirely on disk.
    pub fn last_tag_on_disk(&self) -> Option<u64> {
        self.last_tag
    }

    /// Flush and sync to stable storage.
    pub fn finish(&mut self) -> io::Result<()> {
        self.flush()?;
        self.out.sync()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Storage in memory that accepts `budget` bytes, then fails with ENOSPC (taking a
    /// partial write first, as a file system does).
    struct Full {
        data: Arc<Mutex<Vec<u8>>>,
        budget: usize,
    }

    impl Write for Full {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            let mut d = self.data.lock().unwrap();
            let room = self.budget.saturating_sub(d.len());
            if room == 0 {
                return Err(io::Error::from_raw_os_error(28));
            }
            let n = room.min(b.len());
            d.extend_from_slice(&b[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Storage for Full {
        fn truncate(&mut self, len: u64) -> io::Result<()> {
            self.data.lock().unwrap().truncate(len as usize);
            Ok(())
        }
    }

    #[test]
    fn a_full_disk_leaves_whole_rows_and_exact_counts() {
        let data = Arc::new(Mutex::new(Vec::new()));
        let d = data.clone();
        let factory: WriterFactory = Arc::new(move |_: &Path| {
            Ok(Box::new(Full {
                data: d.clone(),
                budget: 50,
            }) as Box<dyn Storage>)
        });
        let mut f = RowFile::create(&factory, Path::new("x.csv"), "a,b").unwrap();
        for k in 0..10u64 {
            f.write_row(&[k as f64, 0.5], k).unwrap();
        }
        let e = f.flush().unwrap_err();
        assert_eq!(e.raw_os_error(), Some(28));
        let text = String::from_utf8(data.lock().unwrap().clone()).unwrap();
        assert!(text.ends_with('\n'), "{text:?}");
        let rows = text.lines().count() as u64 - 1;
        assert_eq!(f.rows_on_disk(), rows);
        assert_eq!(f.last_tag_on_disk(), Some(rows - 1));
        assert_eq!(text.lines().last().unwrap(), format!("{}.0,0.5", rows - 1));
        assert!(rows > 0 && rows < 10, "{rows}");
    }

    #[test]
    fn a_full_disk_leaves_whole_binary_rows_and_exact_counts() {
        let data = Arc::new(Mutex::new(Vec::new()));
        let d = data.clone();
        let factory: WriterFactory = Arc::new(move |_: &Path| {
            Ok(Box::new(Full {
                data: d.clone(),
                budget: 100,
            }) as Box<dyn Storage>)
        });
        let mut f =
            RowFile::create_as(&factory, Path::new("x.bin"), "a[m],b", RowFormat::Binary).unwrap();
        assert!(f.write_row(&[1.0], 9).is_err(), "a row of the wrong width");
        for k in 0..10u64 {
            f.write_row(&[k as f64, -0.0], k).unwrap();
        }
        let e = f.flush().unwrap_err();
        assert_eq!(e.raw_os_error(), Some(28));
        let bytes = data.lock().unwrap().clone();
        let t = hybridsim_plot::binary::parse(&bytes, Path::new("x.bin")).unwrap();
        assert_eq!(t.partial_row_bytes, 0);
        let rows = t.table.rows() as u64;
        assert!(rows > 0 && rows < 10, "{rows}");
        assert_eq!(f.rows_on_disk(), rows);
        assert_eq!(f.last_tag_on_disk(), Some(rows - 1));
        assert_eq!(t.table.names, ["a", "b"]);
        assert_eq!(t.table.columns[0][rows as usize - 1], (rows - 1) as f64);
        assert_eq!(t.table.columns[1][0].to_bits(), (-0.0f64).to_bits());
    }

    /// A wide header goes straight to the storage: the row buffer keeps its size (it grew to
    /// the header's and stayed so for the whole run, 35 MB of a 10⁵-DOF chain's run), and the
    /// file is the header and the rows as before.
    #[test]
    fn a_wide_header_does_not_grow_the_row_buffer() {
        let data = Arc::new(Mutex::new(Vec::new()));
        let d = data.clone();
        let factory: WriterFactory = Arc::new(move |_: &Path| {
            Ok(Box::new(Full {
                data: d.clone(),
                budget: usize::MAX,
            }) as Box<dyn Storage>)
        });
        let header: Vec<String> = (0..100_000).map(|i| format!("u.{i}.x[m]")).collect();
        let header = header.join(",");
        let mut f = RowFile::create(&factory, Path::new("x.csv"), &header).unwrap();
        assert!(
            f.buf.capacity() <= BUFFER_BYTES + 4096,
            "{}",
            f.buf.capacity()
        );
        f.write_row(&[1.5, 2.0], 0).unwrap();
        f.finish().unwrap();
        let text = String::from_utf8(data.lock().unwrap().clone()).unwrap();
        assert_eq!(text, format!("{header}\n1.5,2.0\n"));
        assert_eq!((f.rows_on_disk(), f.last_tag_on_disk()), (1, Some(0)));
    }

    /// A header the storage refuses part-way leaves an empty file and the error.
    #[test]
    fn a_header_that_does_not_fit_leaves_an_empty_file() {
        let data = Arc::new(Mutex::new(Vec::new()));
        let d = data.clone();
        let factory: WriterFactory = Arc::new(move |_: &Path| {
            Ok(Box::new(Full {
                data: d.clone(),
                budget: 7,
            }) as Box<dyn Storage>)
        });
        for format in [RowFormat::Csv, RowFormat::Binary] {
            data.lock().unwrap().clear();
            let e = RowFile::create_as(&factory, Path::new("x"), "alpha[m],beta[m]", format)
                .err()
                .expect("the header does not fit");
            assert_eq!(e.raw_os_error(), Some(28));
            assert!(data.lock().unwrap().is_empty());
        }
    }
}
