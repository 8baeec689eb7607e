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
/// Bytes handed to the storage between two calls of [`Storage::start_writeback`]: the file's
/// bytes are written back while the run goes on, 8 MiB at a time (a few hundred writes of the
/// buffer), so that the final sync waits for the last of them only.
const WRITEBACK_BYTES: u64 = 8 << 20;
/// Values of a CSV row spelled into the buffer at a time: a wide row goes to the storage in
/// blocks of about [`BUFFER_BYTES`], so that the buffer does not grow to a whole row's text
/// (15 MB for a 10⁵-DOF chain's 600 001 columns, issue 20).
const CHUNK_VALUES: usize = 4096;

/// A writer that counts the bytes it passes on.
struct CountedWriter<'a> {
    out: &'a mut Box<dyn Storage>,
    bytes: u64,
}

impl Write for CountedWriter<'_> {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        let n = self.out.write(b)?;
        self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// Where the bytes of a results file go.
pub trait Storage: Write + Send {
    /// Cut the file back to its first `len` bytes (drops a partial row after a failed write)
    /// and continue writing from there.
    fn truncate(&mut self, len: u64) -> io::Result<()>;
    /// Force the written bytes to stable storage.
    fn sync(&mut self) -> io::Result<()> {
        Ok(())
    }
    /// Start writing the `len` bytes from `start` back to stable storage, without waiting for
    /// them: a hint, so that the final [`Storage::sync`] finds most of a long file already
    /// written rather than writing it all then (nothing by default).
    fn start_writeback(&mut self, _start: u64, _len: u64) {}
}

impl Storage for std::fs::File {
    fn truncate(&mut self, len: u64) -> io::Result<()> {
        self.set_len(len)?;
        self.seek(SeekFrom::Start(len)).map(|_| ())
    }
    fn sync(&mut self) -> io::Result<()> {
        self.sync_all()
    }
    /// `sync_file_range(SYNC_FILE_RANGE_WRITE)` on Linux: the writeback of the range is
    /// queued and the call returns (it blocks only while the device's queue is full, on the
    /// writer thread). A failed write-back is still reported by the final `fsync` (the
    /// kernel keeps the error for it); the hint's own failure is ignored. The results of a
    /// recorded 10⁵-DOF frame (17.4 MB a row) were written back at the end of the run by its
    /// `fsync` alone: 0.4–1.7 s for 50–100 rows (issue 20, session 26).
    fn start_writeback(&mut self, start: u64, len: u64) {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            let (Ok(start), Ok(len)) =
                (libc::off64_t::try_from(start), libc::off64_t::try_from(len))
            else {
                return;
            };
            // SAFETY: a plain system call on this file's open descriptor; no memory is passed.
            unsafe {
                libc::sync_file_range(self.as_raw_fd(), start, len, libc::SYNC_FILE_RANGE_WRITE);
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = (start, len);
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
    /// Bytes on disk up to the end of the last whole row.
    on_disk: u64,
    /// Bytes handed to the storage: [`RowFile::on_disk`] and the first blocks of a row wider
    /// than the buffer (written in blocks, issue 20).
    handed: u64,
    /// Bytes whose write-back was started ([`Storage::start_writeback`]).
    written_back: u64,
    /// The CSV row being written has fields already ([`RowFile::write_row_text`]): the next
    /// ones follow a comma.
    open_fields: bool,
    rows_on_disk: u64,
    last_tag: Option<u64>,
}

/// The cells of a results file's header (`name[unit]` each), written when the file is
/// created, one after the other: a wide model's header (about 25 MB for 600 001 columns) need
/// not be held whole (issue 20).
pub trait HeaderCells {
    /// Number of cells.
    fn count(&self) -> usize;
    /// Write every cell to `out`, each followed by `separator` except the last when
    /// `after_last` is false.
    fn write_cells(&self, out: &mut dyn Write, separator: u8, after_last: bool) -> io::Result<()>;
}

/// A header given as one comma-separated line.
impl HeaderCells for str {
    fn count(&self) -> usize {
        if self.is_empty() {
            0
        } else {
            self.split(',').count()
        }
    }
    fn write_cells(&self, out: &mut dyn Write, separator: u8, after_last: bool) -> io::Result<()> {
        let n = self.count();
        for (i, cell) in self.split(',').take(n).enumerate() {
            out.write_all(cell.as_bytes())?;
            if after_last || i + 1 < n {
                out.write_all(&[separator])?;
            }
        }
        Ok(())
    }
}

/// Bytes written through it, nowhere.
struct Counter(u64);

impl Write for Counter {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.0 += b.len() as u64;
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl RowFile {
    /// Open `path` through `factory` and write `header` (comma-separated names) to it at once,
    /// as CSV text.
    pub fn create(factory: &WriterFactory, path: &Path, header: &str) -> io::Result<Self> {
        Self::create_as(factory, path, header, RowFormat::Csv)
    }

    /// Open `path` through `factory` and write `header` (comma-separated `name[unit]` cells)
    /// to it at once, in `format` ([`RowFile::create_with`]).
    pub fn create_as(
        factory: &WriterFactory,
        path: &Path,
        header: &str,
        format: RowFormat,
    ) -> io::Result<Self> {
        Self::create_with(factory, path, header, format)
    }

    /// Open `path` through `factory` and write the header of the `header` cells to it at once,
    /// in `format`: a CSV line of comma-separated cells, or the binary layout's header
    /// ([`hybridsim_plot::binary::encode_header`], the same bytes). The header goes straight
    /// to the storage through a small buffer, not through the row buffer, and is never held
    /// whole: a wide model's header (about 25 MB for 600 001 columns) would otherwise grow the
    /// buffer to its size for the whole run (issue 20). If the storage refuses part of it, the
    /// file is cut back to empty and the error returned.
    pub fn create_with(
        factory: &WriterFactory,
        path: &Path,
        header: &(impl HeaderCells + ?Sized),
        format: RowFormat,
    ) -> io::Result<Self> {
        let columns = header.count();
        let mut f = Self {
            out: factory(path)?,
            format,
            columns,
            buf: Vec::with_capacity(BUFFER_BYTES + 4096),
            tags: Vec::new(),
            ends: Vec::new(),
            num: zmij::Buffer::new(),
            on_disk: 0,
            handed: 0,
            written_back: 0,
            open_fields: false,
            rows_on_disk: 0,
            last_tag: None,
        };
        f.write_header(|out| match format {
            RowFormat::Csv => {
                header.write_cells(out, b',', false)?;
                out.write_all(b"\n")
            }
            RowFormat::Binary => {
                use hybridsim_plot::binary::{FIXED_HEADER_BYTES, MAGIC, VERSION};
                let mut text = Counter(0);
                header.write_cells(&mut text, b'\n', true)?;
                let text = text.0 as usize;
                let first_row = (FIXED_HEADER_BYTES + text).div_ceil(8) * 8;
                let fixed = |n: usize| u32::try_from(n).map_err(io::Error::other);
                out.write_all(&MAGIC)?;
                out.write_all(&VERSION.to_le_bytes())?;
                out.write_all(&fixed(columns)?.to_le_bytes())?;
                out.write_all(&fixed(first_row)?.to_le_bytes())?;
                out.write_all(&fixed(text)?.to_le_bytes())?;
                header.write_cells(out, b'\n', true)?;
                out.write_all(&vec![0; first_row - FIXED_HEADER_BYTES - text])
            }
        })?;
        Ok(f)
    }

    /// Write the header through `write` straight to the storage (a buffer of
    /// [`BUFFER_BYTES`] between) and flush it; on an error the file is cut back to empty
    /// (never part of a header) and the error returned.
    fn write_header(
        &mut self,
        write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    ) -> io::Result<()> {
        let mut counted = CountedWriter {
            out: &mut self.out,
            bytes: 0,
        };
        let written = {
            let mut buffered = io::BufWriter::with_capacity(BUFFER_BYTES, &mut counted);
            write(&mut buffered).and_then(|()| buffered.flush())
        }
        .and_then(|()| counted.out.flush());
        let bytes = counted.bytes;
        if let Err(e) = written {
            if let Err(t) = self.out.truncate(0) {
                return Err(io::Error::new(
                    e.kind(),
                    format!("{e}; and the partial header could not be cut: {t}"),
                ));
            }
            return Err(e);
        }
        self.on_disk = bytes;
        self.handed = bytes;
        Ok(())
    }

    /// The format of the rows.
    pub fn format(&self) -> RowFormat {
        self.format
    }

    /// Append one row tagged `tag`, spelled straight into the write buffer (no line buffer,
    /// no allocation once the buffer has grown to its size); written out when the buffer is
    /// full, a wide CSV row in blocks ([`RowFile::write_spelled_row`]). A binary row must have
    /// the header's number of values.
    pub fn write_row(&mut self, row: &[f64], tag: u64) -> io::Result<()> {
        match self.format {
            RowFormat::Csv => self.write_spelled_row(&[], row, tag),
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
                self.end_row(tag)
            }
        }
    }

    /// Append one CSV row tagged `tag` whose first numbers are already spelled: `spelled` is
    /// the text of the row's first columns ([`crate::csv::push_fields`], no comma after it,
    /// empty for none), `rest` the values of the others. The line is the one [`Self::write_row`]
    /// writes for the whole row, byte for byte; the results writer of `run` has a wide row's
    /// first columns spelled on the stepping thread (issue 20). A binary file takes no text.
    ///
    /// The values are spelled a few thousand at a time, and the buffer is handed to the
    /// storage whenever it is full, also in the middle of a row: the file then ends in the
    /// row's first part until the rest follows (the whole rows on disk,
    /// [`RowFile::rows_on_disk`], are counted at row ends only), and a write error cuts it back
    /// to the last whole row, as for any row.
    pub fn write_spelled_row(&mut self, spelled: &[u8], rest: &[f64], tag: u64) -> io::Result<()> {
        self.write_row_text(spelled)?;
        self.end_row_with(rest, tag)
    }

    /// Append `spelled`, the text of a CSV row's first columns ([`crate::csv::push_fields`],
    /// no comma after it), to the row being written; the row is ended by
    /// [`RowFile::end_row_with`]. The text is copied into the write buffer at once, so that
    /// its buffer may be spelled again (the next row's first columns, on the stepping thread)
    /// while the rest of this row is spelled (issue 20, session 26). A binary file takes no
    /// text.
    pub fn write_row_text(&mut self, spelled: &[u8]) -> io::Result<()> {
        if spelled.is_empty() {
            return Ok(());
        }
        if self.format != RowFormat::Csv {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a spelled row for a binary results file",
            ));
        }
        for piece in spelled.chunks(CHUNK_VALUES * crate::csv::MAX_FIELD_BYTES) {
            self.buf.extend_from_slice(piece);
            if self.buf.len() >= BUFFER_BYTES {
                self.hand_over()?;
            }
        }
        self.open_fields = true;
        Ok(())
    }

    /// Append the values `rest` to the CSV row being written (after the text of
    /// [`RowFile::write_row_text`], if any), end it and tag it `tag`.
    pub fn end_row_with(&mut self, rest: &[f64], tag: u64) -> io::Result<()> {
        if self.format != RowFormat::Csv {
            return self.write_row(rest, tag);
        }
        let mut comma = std::mem::take(&mut self.open_fields);
        for chunk in rest.chunks(CHUNK_VALUES) {
            crate::csv::push_fields(&mut self.buf, chunk, comma, &mut self.num);
            comma = true;
            if self.buf.len() >= BUFFER_BYTES {
                self.hand_over()?;
            }
        }
        self.buf.push(b'\n');
        self.end_row(tag)
    }

    /// Mark the end of a row tagged `tag` in the buffer; written out when the buffer is full.
    fn end_row(&mut self, tag: u64) -> io::Result<()> {
        self.ends.push(self.buf.len());
        self.tags.push(tag);
        if self.buf.len() >= BUFFER_BYTES {
            self.hand_over()?;
        }
        Ok(())
    }

    /// Hand every buffered byte to the storage. On an error the file is cut back to the
    /// last whole row that reached it, the rows that did not are dropped, and the error is
    /// returned (with the cut's own failure, if any, in its text).
    pub fn flush(&mut self) -> io::Result<()> {
        self.hand_over()
    }

    /// [`RowFile::flush`]: the buffer, ending in whole rows or in the first part of a row, to
    /// the storage.
    fn hand_over(&mut self) -> io::Result<()> {
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
        if rows > 0 {
            self.last_tag = Some(self.tags[rows - 1]);
            self.on_disk = self.handed + self.ends[rows - 1] as u64;
        }
        self.rows_on_disk += rows as u64;
        let reached = self.handed + done as u64;
        self.buf.clear();
        self.tags.clear();
        self.ends.clear();
        match failure {
            None => {
                self.handed = reached;
                if reached - self.written_back >= WRITEBACK_BYTES {
                    self.out
                        .start_writeback(self.written_back, reached - self.written_back);
                    self.written_back = reached;
                }
                Ok(())
            }
            Some(e) => {
                // The storage holds `reached` bytes: cut a partial row off.
                self.open_fields = false;
                self.handed = self.on_disk;
                self.written_back = self.written_back.min(self.on_disk);
                if reached > self.on_disk {
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

    /// A storage in memory with no limit ([`Full`] of an unbounded budget), and its bytes.
    fn unbounded_memory() -> (WriterFactory, Arc<Mutex<Vec<u8>>>) {
        let data = Arc::new(Mutex::new(Vec::new()));
        let d = data.clone();
        let factory: WriterFactory = Arc::new(move |_: &Path| {
            Ok(Box::new(Full {
                data: d.clone(),
                budget: usize::MAX,
            }) as Box<dyn Storage>)
        });
        (factory, data)
    }

    /// A wide header goes straight to the storage: the row buffer keeps its size (it grew to
    /// the header's and stayed so for the whole run, 35 MB of a 10⁵-DOF chain's run), and the
    /// file is the header and the rows as before.
    #[test]
    fn a_wide_header_does_not_grow_the_row_buffer() {
        let (factory, data) = unbounded_memory();
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

    /// Rows wider than the buffer go to the storage in blocks; a full disk in the middle of
    /// a row (after some of its blocks reached the file) cuts the file back to the last whole
    /// row, with exact counts, for CSV rows written whole and with a spelled part.
    #[test]
    fn a_full_disk_in_the_middle_of_a_wide_row_leaves_whole_rows() {
        let width = 20_000;
        let row: Vec<f64> = (0..width).map(|i| 1.0 + i as f64 * 1e-7).collect();
        let mut line = Vec::new();
        crate::csv::push_row(&mut line, &row, &mut zmij::Buffer::new());
        assert!(line.len() > 3 * BUFFER_BYTES, "{} bytes a row", line.len());
        for spelled_columns in [0, 10, 9_000] {
            let data = Arc::new(Mutex::new(Vec::new()));
            let d = data.clone();
            // Room for the header, two rows and most of a third.
            let budget = 4 + 2 * line.len() + line.len() / 2;
            let factory: WriterFactory = Arc::new(move |_: &Path| {
                Ok(Box::new(Full {
                    data: d.clone(),
                    budget,
                }) as Box<dyn Storage>)
            });
            let mut f = RowFile::create(&factory, Path::new("x.csv"), "a,b").unwrap();
            let (first, rest) = row.split_at(spelled_columns);
            let mut spelled = Vec::new();
            crate::csv::push_fields(&mut spelled, first, false, &mut zmij::Buffer::new());
            let mut error = None;
            for k in 0..4u64 {
                let r = if k % 2 == 0 {
                    f.write_row(&row, k)
                } else {
                    f.write_spelled_row(&spelled, rest, k)
                };
                if let Err(e) = r {
                    error = Some(e);
                    break;
                }
            }
            let e = error.expect("the disk is full in the third row");
            assert_eq!(e.raw_os_error(), Some(28));
            let bytes = data.lock().unwrap().clone();
            let mut expected = b"a,b\n".to_vec();
            expected.extend_from_slice(&line);
            expected.extend_from_slice(&line);
            assert!(
                bytes == expected,
                "{spelled_columns}: {} bytes",
                bytes.len()
            );
            assert_eq!((f.rows_on_disk(), f.last_tag_on_disk()), (2, Some(1)));
            assert!(f.buf.capacity() <= 2 * (BUFFER_BYTES + CHUNK_VALUES * 25) + 4096);
        }
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

    /// Storage in memory that keeps the ranges whose write-back was started, failing with
    /// ENOSPC after `budget` bytes.
    struct Tracked {
        data: Vec<u8>,
        budget: usize,
        written_back: Arc<Mutex<Vec<(u64, u64)>>>,
    }

    impl Write for Tracked {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            let room = self.budget.saturating_sub(self.data.len());
            if room == 0 {
                return Err(io::Error::from_raw_os_error(28));
            }
            let n = room.min(b.len());
            self.data.extend_from_slice(&b[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Storage for Tracked {
        fn truncate(&mut self, len: u64) -> io::Result<()> {
            self.data.truncate(len as usize);
            Ok(())
        }
        fn start_writeback(&mut self, start: u64, len: u64) {
            assert!(
                start + len <= self.data.len() as u64,
                "past the end of the file"
            );
            self.written_back.lock().unwrap().push((start, len));
        }
    }

    /// The bytes handed to the storage are written back while the file grows: one range
    /// after the other from the file's start, each at least [`WRITEBACK_BYTES`] and within the
    /// file; after a full disk cut a partial row off, the next range starts at the cut.
    #[test]
    fn the_file_is_written_back_while_it_grows() {
        let ranges = Arc::new(Mutex::new(Vec::new()));
        let (r, budget) = (ranges.clone(), 30 << 20);
        let factory: WriterFactory = Arc::new(move |_: &Path| {
            Ok(Box::new(Tracked {
                data: Vec::new(),
                budget,
                written_back: r.clone(),
            }) as Box<dyn Storage>)
        });
        let mut f = RowFile::create(&factory, Path::new("x.csv"), "a").unwrap();
        let row: Vec<f64> = (0..100_000).map(|i| 0.1 + i as f64 * 1e-9).collect();
        let mut error = None;
        for k in 0..100 {
            if let Err(e) = f.write_row(&row, k) {
                error = Some(e);
                break;
            }
        }
        assert_eq!(error.map(|e| e.raw_os_error()), Some(Some(28)));
        let ranges = ranges.lock().unwrap().clone();
        assert!(ranges.len() >= 3, "{ranges:?}");
        let mut end = 0;
        for (start, len) in &ranges {
            assert_eq!(*start, end, "{ranges:?}");
            assert!(*len >= WRITEBACK_BYTES, "{ranges:?}");
            end = start + len;
        }
        assert!(end <= budget as u64);
        assert_eq!(f.written_back, f.written_back.min(f.on_disk));
        assert!(f.written_back <= f.on_disk && f.handed == f.on_disk);
    }

    /// A row given as its first columns' text ([`RowFile::write_row_text`], in one piece or
    /// several) then the rest's values ([`RowFile::end_row_with`]) is the line of the whole
    /// row, for every split, narrow and wider than the buffer; a binary file takes its values
    /// only.
    #[test]
    fn a_row_given_as_text_then_values_is_the_whole_row() {
        let factory = || unbounded_memory().0;
        let text = |row: &[f64]| {
            let mut t = Vec::new();
            crate::csv::push_fields(&mut t, row, false, &mut zmij::Buffer::new());
            t
        };
        let wide: Vec<f64> = (0..30_000).map(|i| (i as f64).sqrt() - 7.0).collect();
        for row in [&wide[..5], &wide[..]] {
            let ((whole_file, whole_text), (split_file, split_text)) =
                (unbounded_memory(), unbounded_memory());
            let mut whole = RowFile::create(&whole_file, Path::new("a.csv"), "a").unwrap();
            let mut split = RowFile::create(&split_file, Path::new("b.csv"), "a").unwrap();
            for (k, first) in [0, 1, 3, row.len() / 2, row.len()].into_iter().enumerate() {
                whole.write_row(row, k as u64).unwrap();
                let (head, rest) = row.split_at(first);
                let middle = head.len() / 2;
                split.write_row_text(&text(&head[..middle])).unwrap();
                if middle > 0 {
                    split.write_row_text(b",").unwrap();
                }
                split.write_row_text(&text(&head[middle..])).unwrap();
                split.end_row_with(rest, k as u64).unwrap();
            }
            whole.flush().unwrap();
            split.flush().unwrap();
            assert_eq!(*whole_text.lock().unwrap(), *split_text.lock().unwrap());
            assert!(whole.handed > 5 * row.len() as u64);
            assert_eq!(whole.rows_on_disk(), 5);
            assert_eq!(split.rows_on_disk(), 5);
        }
        let mut binary =
            RowFile::create_as(&factory(), Path::new("c.bin"), "a,b", RowFormat::Binary).unwrap();
        binary.write_row_text(b"").unwrap();
        assert!(binary.write_row_text(b"1.0").is_err());
        binary.end_row_with(&[1.0, 2.0], 0).unwrap();
        binary.flush().unwrap();
        assert_eq!(binary.rows_on_disk(), 1);
    }
}
