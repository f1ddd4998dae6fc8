//! `cargo xtask readme`: the README's Rust examples, built and run as a user would have them.
//!
//! The examples are already doc tests of `agent-memory-kit`; this check goes one step
//! further and copies each ```` ```rust ```` block, unchanged, into `examples/` of a new
//! crate under `target/readme-consumer/` that depends on the umbrella crate by path and on
//! `serde_json`, exactly as the README's dependency block says, then builds them and runs
//! them as a newcomer would: one by one in a fresh folder, in the README's order, then all
//! again in the same folder.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result, bail};

use crate::{cargo, target_dir, workspace_root};

/// Builds and runs every Rust example of the README in a crate of its own.
pub(crate) fn run(args: &[String]) -> Result<()> {
    if let Some(extra) = args.first() {
        bail!("`cargo xtask readme` takes no arguments (got {extra:?})");
    }
    let root = workspace_root();
    let readme = std::fs::read_to_string(root.join("README.md")).context("reading README.md")?;
    let examples = rust_blocks(&readme);
    if examples.is_empty() {
        bail!("README.md has no ```rust example");
    }
    let target = target_dir(&root);
    let consumer = target.join("readme-consumer");
    if consumer.exists() {
        std::fs::remove_dir_all(&consumer)
            .with_context(|| format!("removing {}", consumer.display()))?;
    }
    std::fs::create_dir_all(consumer.join("examples"))
        .with_context(|| format!("creating {}", consumer.display()))?;
    std::fs::write(consumer.join("Cargo.toml"), manifest(&root, examples.len()))
        .context("writing the consumer's Cargo.toml")?;
    // The workspace's lock file pins the same versions, so the build needs no new download.
    std::fs::copy(root.join("Cargo.lock"), consumer.join("Cargo.lock"))
        .context("copying Cargo.lock")?;
    std::fs::write(consumer.join("src.rs"), "//! Only the examples matter.\n")
        .context("writing the consumer's library")?;
    for (index, example) in examples.iter().enumerate() {
        let path = consumer.join(format!("examples/readme_{}.rs", index + 1));
        std::fs::write(&path, example).with_context(|| format!("writing {}", path.display()))?;
    }
    let manifest_path = consumer.join("Cargo.toml");
    let manifest_path = manifest_path.to_string_lossy();
    // The workspace's target directory: the dependencies are already built there.
    let target = target.to_string_lossy();
    let env = [("CARGO_TARGET_DIR", target.as_ref())];
    cargo(
        &consumer,
        &[
            "build",
            "--quiet",
            "--manifest-path",
            &manifest_path,
            "--examples",
        ],
        &env,
    )?;
    // As a newcomer runs them: in one fresh folder, in the README's order, then all again.
    let folder = consumer.join("run");
    std::fs::create_dir_all(&folder).with_context(|| format!("creating {}", folder.display()))?;
    for run in ["first", "second"] {
        for (index, example) in examples.iter().enumerate() {
            let name = format!("readme_{}", index + 1);
            let first = example.lines().find(|line| !line.trim().is_empty());
            cargo(
                &folder,
                &[
                    "run",
                    "--quiet",
                    "--manifest-path",
                    &manifest_path,
                    "--example",
                    &name,
                ],
                &env,
            )
            .with_context(|| {
                format!(
                    "README.md example {} ({:?}), examples/{name}.rs, failed on the {run} run in {}",
                    index + 1,
                    first.unwrap_or_default(),
                    folder.display()
                )
            })?;
        }
    }
    println!(
        "{} README example(s) built, then ran twice in one folder, in a crate depending on agent-memory-kit",
        examples.len()
    );
    Ok(())
}

/// The code of every ```` ```rust ```` block (```` ```rust,no_run ```` too), in order.
pub(crate) fn rust_blocks(markdown: &str) -> Vec<String> {
    fenced(markdown, &["rust"])
        .into_iter()
        .map(|(_, code)| code)
        .collect()
}

/// Every fenced block of one of `languages` (the first word of its info string:
/// ```` ```rust,no_run ```` is `rust`), in order, with its language.
pub(crate) fn fenced<'a>(markdown: &str, languages: &[&'a str]) -> Vec<(&'a str, String)> {
    let mut blocks = Vec::new();
    // `None` outside a fenced block; `Some(None)` inside a block of another language;
    // `Some(Some((language, code)))` inside a block of one of `languages`.
    let mut block: Option<Option<(&str, String)>> = None;
    for line in markdown.lines() {
        let is_fence = line.trim_start().starts_with("```");
        match (block.as_mut(), is_fence) {
            (None, true) => {
                let info = line.trim_start().trim_start_matches('`').trim();
                let language = info.split(',').next().unwrap_or_default();
                let wanted = languages.iter().find(|wanted| **wanted == language);
                block = Some(wanted.map(|language| (*language, String::new())));
            }
            (None, false) => {}
            (Some(_), true) => blocks.extend(block.take().flatten()),
            (Some(Some((_, code))), false) => {
                code.push_str(line);
                code.push('\n');
            }
            (Some(None), false) => {}
        }
    }
    blocks
}

/// The consumer crate's manifest: the README's dependency block, by path, and the
/// workspace's profile settings (so the dependencies built for the workspace are reused).
fn manifest(root: &Path, examples: usize) -> String {
    let kit = root.join("crates/kit");
    let mut toml = format!(
        "[package]\nname = \"readme-consumer\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n\
         [lib]\npath = \"src.rs\"\n\n\
         [dependencies]\nagent-memory-kit = {{ path = {:?} }}\nserde_json = \"1\"\n\n\
         [profile.dev.package.\"*\"]\nopt-level = 1\n\n[workspace]\n",
        kit.to_string_lossy()
    );
    for index in 1..=examples {
        let _ = write!(
            toml,
            "\n[[example]]\nname = \"readme_{index}\"\npath = \"examples/readme_{index}.rs\"\n"
        );
    }
    toml
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_rust_blocks_are_taken_whole_and_in_order() {
        let markdown = "text\n```toml\n[dependencies]\n```\n```rust\nfn a() {}\n\nfn b() {}\n```\n\
                        ```sh\ncargo run\n```\n```rust,no_run\nfn c() {}\n```\n";
        assert_eq!(
            rust_blocks(markdown),
            vec![
                "fn a() {}\n\nfn b() {}\n".to_owned(),
                "fn c() {}\n".to_owned()
            ]
        );
    }

    #[test]
    fn a_rust_block_inside_another_language_is_not_taken() {
        // Lines of a shell block that look like a fence opener must not start a Rust block.
        let markdown = "```sh\necho x\n```\nprose\n```rust\nfn main() {}\n```\n";
        assert_eq!(rust_blocks(markdown), vec!["fn main() {}\n".to_owned()]);
    }

    #[test]
    fn blocks_of_several_languages_keep_the_markdown_s_order() {
        let markdown = "```python\na = 1\n```\n```text\nout\n```\n```diff\n-b\n+c\n```\n\
                        ```python\nd = 2\n```\n";
        assert_eq!(
            fenced(markdown, &["python", "diff"]),
            vec![
                ("python", "a = 1\n".to_owned()),
                ("diff", "-b\n+c\n".to_owned()),
                ("python", "d = 2\n".to_owned())
            ]
        );
    }

    #[test]
    fn the_readme_has_examples_for_every_memory() {
        let readme = std::fs::read_to_string(workspace_root().join("README.md")).expect("README");
        let blocks = rust_blocks(&readme);
        for memory in [
            "TrajectoryMemory",
            "recording::",
            "turns::",
            "BrowserMemory",
        ] {
            assert!(
                blocks.iter().any(|b| b.contains(memory)),
                "no README example uses {memory}"
            );
        }
    }
}
