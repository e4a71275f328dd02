#!/bin/sh
# Build the Debian package (target/debian/hugelab_*.deb) with cargo-deb: the release binary,
# then the man pages and shell completions it generates, then the package.
set -eu
cd "$(dirname "$0")/.."
command -v cargo-deb >/dev/null || cargo install cargo-deb --locked
cargo build --release
rm -rf target/assets && mkdir -p target/assets/man target/assets/completions
target/release/hugelab man --out target/assets/man >/dev/null
gzip -9n target/assets/man/*.1
target/release/hugelab completions bash > target/assets/completions/hugelab
target/release/hugelab completions zsh > target/assets/completions/_hugelab
target/release/hugelab completions fish > target/assets/completions/hugelab.fish
cargo deb --no-build --strip
