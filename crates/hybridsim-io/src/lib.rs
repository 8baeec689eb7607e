//! File-system side of hybridsim: reading model files (and the records they refer to) and
//! writing a results folder per run.
//!
//! A run folder holds `results.csv` (every recorded channel, header `name[unit]`), a copy of
//! the model file, and `run.json` (model hash, settings, version, timing, status). Rows are
//! produced by the simulation loop into recycled buffers and written by a separate writer
//! thread fed through a bounded queue; the file is flushed regularly and only ever holds whole
//! rows ([`RowFile`]), so a run that fails part-way keeps every completed step on disk and
//! `run.json` says where and why it stopped. `run.json` is a journal rewritten at every state
//! change and about every second (a heartbeat with the counts of what is on disk), so that a
//! killed process still leaves a truthful folder; a results folder is never overwritten
//! silently ([`prepare_folder`]).

#![warn(missing_docs)]

pub mod csv;
mod folder;
pub mod inputs;
pub mod lab;
pub mod memory;
mod results;
mod rowfile;
pub mod startup;
pub mod sweep;
pub mod updating;

pub use folder::{prepare_folder, FolderError};
pub use results::{
    run_to_folder, run_to_folder_with, unix_now, utc_timestamp, write_json_atomic, RunError,
    RunOptions, RunReport, RunStatus,
};
pub use rowfile::{file_factory, HeaderCells, RowFile, RowFormat, Storage, WriterFactory};

use hybridsim::model::SourceResolver;
use hybridsim::{Model, ModelError};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// Reads files named in a model relative to the model file's folder.
#[derive(Debug, Clone)]
pub struct FolderResolver {
    /// Folder of the model file.
    pub base: PathBuf,
}

impl SourceResolver for FolderResolver {
    fn read_to_string(&self, path: &str) -> Result<String, String> {
        let p = if Path::new(path).is_absolute() {
            PathBuf::from(path)
        } else {
            self.base.join(path)
        };
        read_bounded(&p, MAX_RECORD_BYTES)
            .map_err(|e| format!("cannot read `{}`: {e}", p.display()))
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
    }
}

/// Largest file a model may name (a ground-motion record): 256 MiB.
pub const MAX_RECORD_BYTES: u64 = 256 << 20;

/// Read a regular file of at most `max` bytes: a device (`/dev/zero`), a FIFO or a file
/// beyond the bound is refused instead of read until memory runs out or forever.
fn read_bounded(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    // The type first, from the path: opening a FIFO would block until a writer comes.
    if !std::fs::metadata(path)?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let file = std::fs::File::open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    if meta.len() > max {
        return Err(std::io::Error::other(format!(
            "{} bytes, more than the {} MiB allowed",
            meta.len(),
            max >> 20
        )));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(std::io::Error::other(format!(
            "more than the {} MiB allowed",
            max >> 20
        )));
    }
    Ok(bytes)
}

/// A model read from disk, with its text and hash.
#[derive(Debug, Clone)]
pub struct LoadedModel {
    /// The validated model.
    pub model: Model,
    /// Path of the model file.
    pub path: PathBuf,
    /// Its text (empty after [`LoadedModel::release_text`]).
    pub text: String,
    /// SHA-256 of the text, hex.
    pub sha256: String,
    /// SHA-256 of each ground-motion record file: `(path as written, hash)`.
    pub record_sha256: Vec<(String, String)>,
    /// Whether `text` was dropped after parsing ([`LoadedModel::release_text`]).
    text_released: bool,
}

impl LoadedModel {
    /// Drop the model file's text, keeping its SHA-256: the text of a 10⁵-DOF model (15 MB
    /// for a shear chain, 45 MB for a 2D frame) was held through the start-up only for the
    /// results folder's copy (issue 20). [`LoadedModel::model_text`] then reads the file again.
    pub fn release_text(&mut self) {
        self.text = String::new();
        self.text_released = true;
    }

    /// The model file's text: the one kept, or, after [`LoadedModel::release_text`], the file
    /// read again, refused with the reason when it cannot be read or its SHA-256 is no longer
    /// the one of the text that was parsed (the copy would not be the model that ran).
    pub fn model_text(&self) -> std::io::Result<std::borrow::Cow<'_, str>> {
        if !self.text_released {
            return Ok(std::borrow::Cow::Borrowed(&self.text));
        }
        let bytes = read_bounded(&self.path, hybridsim::config::MAX_MODEL_FILE_BYTES as u64)
            .map_err(|e| {
                std::io::Error::new(e.kind(), format!("cannot read the model file again: {e}"))
            })?;
        if hex(&Sha256::digest(&bytes)) != self.sha256 {
            return Err(std::io::Error::other(format!(
                "the model file changed after it was read (its SHA-256 is no longer {}), so \
                 its copy would not be the model that ran",
                self.sha256
            )));
        }
        String::from_utf8(bytes)
            .map(std::borrow::Cow::Owned)
            .map_err(std::io::Error::other)
    }
}

impl LoadedModel {
    /// Write the model file's copy to `dest` (the results folder's `model.toml`): the text kept,
    /// or, after [`LoadedModel::release_text`], the file streamed again in 64 KiB pieces and
    /// hashed on the way, so a 10⁵-DOF model's 45 MB of text is not held a second time while
    /// the start-up's other arrays are live (issue 20). A file that can no longer be read, or
    /// whose SHA-256 is no longer the one of the text that was parsed, is refused with the
    /// reason and the partial copy removed (it would not be the model that ran).
    pub fn copy_model_to(&self, dest: &Path) -> std::io::Result<()> {
        use std::io::{Read, Write};
        if !self.text_released {
            return std::fs::write(dest, self.text.as_bytes());
        }
        let again = |e: std::io::Error| {
            let path = self.path.display();
            std::io::Error::new(
                e.kind(),
                format!("cannot read the model file {path} again: {e}"),
            )
        };
        if !std::fs::metadata(&self.path).map_err(again)?.is_file() {
            return Err(again(std::io::Error::other("not a regular file")));
        }
        let mut source = std::fs::File::open(&self.path).map_err(again)?;
        let mut copy = std::io::BufWriter::with_capacity(1 << 16, std::fs::File::create(dest)?);
        let mut hasher = Sha256::new();
        let mut piece = vec![0u8; 1 << 16];
        let max = hybridsim::config::MAX_MODEL_FILE_BYTES as u64;
        let mut total = 0u64;
        let streamed = (|| -> std::io::Result<()> {
            loop {
                let k = match source.read(&mut piece) {
                    Ok(0) => break,
                    Ok(k) => k,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(again(e)),
                };
                total += k as u64;
                if total > max {
                    return Err(again(std::io::Error::other(format!(
                        "more than the {} MiB allowed",
                        max >> 20
                    ))));
                }
                hasher.update(&piece[..k]);
                copy.write_all(&piece[..k])?;
            }
            if hex(&hasher.finalize_reset()) != self.sha256 {
                return Err(std::io::Error::other(format!(
                    "the model file changed after it was read (its SHA-256 is no longer {}), \
                     so its copy would not be the model that ran",
                    self.sha256
                )));
            }
            copy.flush()
        })();
        if streamed.is_err() {
            drop(copy);
            let _ = std::fs::remove_file(dest);
        }
        streamed
    }
}

/// Read and validate a model file.
pub fn load_model(path: &Path) -> Result<LoadedModel, ModelError> {
    let (name, text, base) = read_model_file(path)?;
    let model = Model::from_toml(&text, &name, &FolderResolver { base: base.clone() })?;
    let sha256 = hex(&Sha256::digest(text.as_bytes()));
    let record_sha256 = inputs::record_hashes(&model, &base);
    Ok(LoadedModel {
        model,
        path: path.to_path_buf(),
        text,
        sha256,
        record_sha256,
        text_released: false,
    })
}

/// Read and validate a model file without keeping its text: the text is hashed, parsed and
/// released before the model's layout is validated ([`hybridsim::config::UnvalidatedModel`]),
/// so the start-up's largest moment, the validation's build of the partitions, does not hold
/// it as well (issue 20: 45 MB for a 2D frame of 10⁵ DOFs). The result is
/// [`load_model`]'s after [`LoadedModel::release_text`]: the same model, hashes and errors;
/// the results folder's copy is the file streamed again and checked against the hash.
pub fn load_model_released(path: &Path) -> Result<LoadedModel, ModelError> {
    let (name, text, base) = read_model_file(path)?;
    let read = Model::read_toml(&text, &name, &FolderResolver { base: base.clone() })?;
    let sha256 = hex(&Sha256::digest(text.as_bytes()));
    drop(text);
    let model = read.validate()?;
    let record_sha256 = inputs::record_hashes(&model, &base);
    Ok(LoadedModel {
        model,
        path: path.to_path_buf(),
        text: String::new(),
        sha256,
        record_sha256,
        text_released: true,
    })
}

/// The text of model file `path` (`name` in messages), refused with the reason when it
/// cannot be read, is not UTF-8 or is beyond [`hybridsim::config::MAX_MODEL_FILE_BYTES`].
/// The start of a load (the start-up clock starts here): the file's name as errors give it,
/// its text (bounded, UTF-8) and the folder its relative paths are resolved from.
fn read_model_file(path: &Path) -> Result<(String, String, PathBuf), ModelError> {
    startup::mark_start();
    let name = path.display().to_string();
    let text = read_bounded(path, hybridsim::config::MAX_MODEL_FILE_BYTES as u64)
        .and_then(|b| String::from_utf8(b).map_err(std::io::Error::other))
        .map_err(|e| {
            ModelError::single(&name, "file", format!("cannot read the model file: {e}"))
        })?;
    let base = path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    Ok((name, text, base))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
