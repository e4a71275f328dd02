//! `hugelab completions SHELL` and `hugelab man`: what a shell and `man` need, generated from
//! the one definition of the command line (clap_complete, clap_mangen), so they never drift.

use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
#[command(
    after_help = "Install, e.g.: hugelab completions bash > /etc/bash_completion.d/hugelab; \
hugelab completions zsh > \"${fpath[1]}/_hugelab\"; \
hugelab completions fish > ~/.config/fish/completions/hugelab.fish"
)]
pub struct CompletionsArgs {
    /// The shell to complete for
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write hugelab.1 and one page per command (hugelab-run.1, …) into this directory,
    /// instead of printing hugelab.1 on stdout
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// `cmd` is the whole command line's definition (`Cli::command()`, given by the binary).
pub fn completions(a: CompletionsArgs, mut cmd: clap::Command) -> anyhow::Result<i32> {
    let mut buf = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "hugelab", &mut buf);
    write_stdout(&buf)
}

pub fn man(a: ManArgs, cmd: clap::Command) -> anyhow::Result<i32> {
    match a.out {
        None => {
            let mut buf = Vec::new();
            clap_mangen::Man::new(cmd).render(&mut buf)?;
            return write_stdout(&buf);
        }
        Some(dir) => {
            std::fs::create_dir_all(&dir)
                .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
            clap_mangen::generate_to(cmd, &dir).map_err(|e| {
                anyhow::anyhow!("cannot write the pages into {}: {e}", dir.display())
            })?;
            println!("man pages written to {}", dir.display());
        }
    }
    Ok(0)
}

/// Stdout closed early (`| head`) is not an error.
fn write_stdout(buf: &[u8]) -> anyhow::Result<i32> {
    use std::io::Write;
    match std::io::stdout().lock().write_all(buf) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(0),
    }
}
