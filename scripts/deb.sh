#!/bin/sh
# Build the Debian package (target/debian/hugelab_*.deb) with cargo-deb: the release binary,
# then the man pages and shell completions it generates, then the package. With
# HUGELAB_DEB_PREBUILT=1 it packages the release binary already in target/release (CI: the one
# its test build made, so that the package check does not build the crate a second time).
set -eu
cd "$(dirname "$0")/.."
command -v cargo-deb >/dev/null || cargo install cargo-deb --locked
if [ "${HUGELAB_DEB_PREBUILT:-}" = 1 ]; then
  test -x target/release/hugelab || { echo "HUGELAB_DEB_PREBUILT=1: no target/release/hugelab; build it first" >&2; exit 1; }
else
  cargo build --release
fi
rm -rf target/assets && mkdir -p target/assets/man target/assets/completions
target/release/hugelab man --out target/assets/man >/dev/null
gzip -9n target/assets/man/*.1
target/release/hugelab completions bash > target/assets/completions/hugelab
target/release/hugelab completions zsh > target/assets/completions/_hugelab
target/release/hugelab completions fish > target/assets/completions/hugelab.fish
cargo deb --no-build --strip
