#!/bin/sh
# Build the Debian package, install it on this machine, run it from its installed path, verify
# the exporter's unit, and remove it again (CI; needs root and apt).
set -eu
cd "$(dirname "$0")/.."
scripts/deb.sh
deb=$(ls target/debian/hugelab_*_amd64.deb | tail -1)
echo "package: $deb ($(du -h "$deb" | cut -f1))"
apt-get install -y -qq "./$deb"
trap 'apt-get purge -y -qq hugelab >/dev/null 2>&1 || true' EXIT
/usr/bin/hugelab --version
# A journal of its own: CI runs this beside the suite, whose tests leave journals for their own
# next command to recover.
own=$(mktemp -d)
HUGELAB_JOURNAL="$own/journal.json" /usr/bin/hugelab status >/dev/null
rm -rf "$own"
test -s /usr/share/man/man1/hugelab-run.1.gz
test -s /usr/share/bash-completion/completions/hugelab
test -s /usr/share/zsh/vendor-completions/_hugelab
test -s /usr/share/fish/vendor_completions.d/hugelab.fish
unit=/usr/lib/systemd/system/hugelab-exporter.service
systemd-analyze verify "$unit"
# Installed disabled: enabling it is the administrator's choice.
if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
  test "$(systemctl is-enabled hugelab-exporter 2>/dev/null || true)" != enabled
fi
apt-get purge -y -qq hugelab
trap - EXIT
test ! -e /usr/bin/hugelab && test ! -e "$unit"
echo "package installed, ran, verified and removed"
