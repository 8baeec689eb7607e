//! Results folders are never overwritten silently.
//!
//! A command that writes a results folder calls [`prepare_folder`] once everything it can
//! validate has been validated (model file, integrator, laboratory at rest), and before it
//! writes anything: a missing folder is created, an empty one is used, a non-empty one is
//! refused unless the caller passes `overwrite`. Even then only a folder that looks like a
//! hybridsim results folder (a `run.json`, and no sub-folder but the `plots/` of images that
//! `hybridsim plot` writes there by default) is cleared, so that `-o .` or a mistyped path
//! cannot delete a project's files.

use std::path::Path;

/// Why a results folder cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum FolderError {
    /// The folder holds files and `--overwrite` was not given.
    #[error(
        "{path}: the results folder is not empty ({entries} entr{plural}, e.g. `{example}`); \
         its files would be mixed with or replaced by this run's: choose another folder with \
         -o, or pass --overwrite to clear a previous run's results first",
        plural = if *entries == 1 { "y" } else { "ies" }
    )]
    NotEmpty {
        /// The folder.
        path: String,
        /// Entries found.
        entries: usize,
        /// One of them.
        example: String,
    },
    /// `--overwrite` was given but the folder does not look like a hybridsim results folder.
    #[error(
        "{path}: refusing to clear this folder with --overwrite: {why}; only a previous \
         hybridsim results folder (with its run.json and no sub-folders) is cleared"
    )]
    NotResults {
        /// The folder.
        path: String,
        /// What is missing or extra.
        why: String,
    },
    /// The path exists and is not a folder.
    #[error("{path}: exists and is not a folder")]
    NotAFolder {
        /// The path.
        path: String,
    },
    /// A file-system error.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> FolderError + '_ {
    move |source| FolderError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Make `folder` ready for a new run: create it if missing; use it if empty; otherwise refuse,
/// or with `overwrite` clear it when it is a previous hybridsim results folder (a `run.json`,
/// no sub-folder but a `plots/` of images), and refuse to clear anything else.
pub fn prepare_folder(folder: &Path, overwrite: bool) -> Result<(), FolderError> {
    let shown = || folder.display().to_string();
    match std::fs::symlink_metadata(folder) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return std::fs::create_dir_all(folder).map_err(io_error(folder));
        }
        Err(e) => return Err(io_error(folder)(e)),
        Ok(m) if !m.is_dir() && !folder.is_dir() => {
            return Err(FolderError::NotAFolder { path: shown() })
        }
        Ok(_) => {}
    }
    let mut entries = Vec::new();
    for entry in std::fs::read_dir(folder).map_err(io_error(folder))? {
        let entry = entry.map_err(io_error(folder))?;
        let kind = entry.file_type().map_err(io_error(&entry.path()))?;
        entries.push((entry.file_name(), kind.is_dir()));
    }
    if entries.is_empty() {
        return Ok(());
    }
    entries.sort();
    if !overwrite {
        return Err(FolderError::NotEmpty {
            path: shown(),
            entries: entries.len(),
            example: entries[0].0.to_string_lossy().into_owned(),
        });
    }
    if !entries.iter().any(|(name, dir)| name == "run.json" && !dir) {
        return Err(FolderError::NotResults {
            path: shown(),
            why: "it has no run.json".into(),
        });
    }
    // The one sub-folder hybridsim writes: `plots/` of `hybridsim plot` (images only).
    let mut plots = Vec::new();
    for (name, dir) in &entries {
        if !dir {
            continue;
        }
        let sub = folder.join(name);
        let images = (name == PLOTS).then(|| plot_images(&sub)).flatten();
        match images {
            Some(files) => plots = files,
            None => {
                return Err(FolderError::NotResults {
                    path: shown(),
                    why: format!(
                        "it holds the sub-folder `{}` (only `{PLOTS}/` with the images of \
                         `hybridsim plot` is cleared)",
                        name.to_string_lossy()
                    ),
                })
            }
        }
    }
    for p in &plots {
        std::fs::remove_file(p).map_err(io_error(p))?;
    }
    // run.json last: a clear interrupted half-way still looks like a results folder.
    entries.sort_by_key(|(name, _)| name == "run.json");
    for (name, dir) in &entries {
        let p = folder.join(name);
        if *dir {
            std::fs::remove_dir(&p).map_err(io_error(&p))?;
        } else {
            std::fs::remove_file(&p).map_err(io_error(&p))?;
        }
    }
    Ok(())
}

/// The default output folder of `hybridsim plot` inside a results folder.
const PLOTS: &str = "plots";

/// The files of `dir` when it holds only images (`.png`, `.svg`) and no sub-folder.
fn plot_images(dir: &Path) -> Option<Vec<std::path::PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).ok()? {
        let entry = entry.ok()?;
        let p = entry.path();
        let image = p.extension().is_some_and(|e| e == "png" || e == "svg");
        if !entry.file_type().ok()?.is_file() || !image {
            return None;
        }
        files.push(p);
    }
    Some(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> std::path::PathBuf {
        let d =
            std::env::temp_dir().join(format!("hybridsim-io-folder-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn missing_and_empty_folders_are_used() {
        let d = dir("missing");
        prepare_folder(&d.join("a/b"), false).unwrap();
        assert!(d.join("a/b").is_dir());
        prepare_folder(&d.join("a/b"), false).unwrap();
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_non_empty_folder_is_refused_and_cleared_only_when_it_is_a_results_folder() {
        let d = dir("full");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("notes.txt"), "mine").unwrap();
        let e = prepare_folder(&d, false).unwrap_err().to_string();
        assert!(e.contains(&d.display().to_string()), "{e}");
        assert!(e.contains("not empty") && e.contains("--overwrite"), "{e}");
        // Not a results folder: --overwrite refuses and deletes nothing.
        let e = prepare_folder(&d, true).unwrap_err().to_string();
        assert!(e.contains("no run.json"), "{e}");
        assert!(d.join("notes.txt").exists());
        // A sub-folder (never written by hybridsim): refused too.
        std::fs::write(d.join("run.json"), "{}").unwrap();
        std::fs::create_dir_all(d.join("figures")).unwrap();
        let e = prepare_folder(&d, true).unwrap_err().to_string();
        assert!(e.contains("figures"), "{e}");
        assert!(d.join("notes.txt").exists() && d.join("run.json").exists());
        // `plots/` with anything but images: refused.
        std::fs::remove_dir_all(d.join("figures")).unwrap();
        std::fs::create_dir_all(d.join("plots")).unwrap();
        std::fs::write(d.join("plots/energy.png"), "png").unwrap();
        std::fs::write(d.join("plots/notes.txt"), "mine").unwrap();
        let e = prepare_folder(&d, true).unwrap_err().to_string();
        assert!(e.contains("plots"), "{e}");
        assert!(d.join("plots/notes.txt").exists() && d.join("plots/energy.png").exists());
        // A previous run's folder with the images of `hybridsim plot`: cleared.
        std::fs::remove_file(d.join("plots/notes.txt")).unwrap();
        std::fs::write(d.join("plots/energy.svg"), "svg").unwrap();
        prepare_folder(&d, true).unwrap();
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 0);
        // A file where the folder should be.
        let f = d.join("file");
        std::fs::write(&f, "x").unwrap();
        let e = prepare_folder(&f, true).unwrap_err().to_string();
        assert!(e.contains("not a folder"), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }
}
