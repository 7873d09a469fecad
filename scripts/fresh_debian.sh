#!/usr/bin/env bash
# The README's test command as a new user meets it: on a bare Debian 12.
# It debootstraps a minimal Debian 12 (--variant=minbase) into a folder,
# copies this clone there to /root/vit (its tracked files and the untracked
# ones git does not ignore, uncommitted changes included, and .git), and runs
# `bash scripts/test.sh` inside as root, in a clean environment, with /proc,
# /sys and /dev mounted. It prints the command's time and exit status, and
# exits with that status.
#
# Needs: root, debootstrap (apt-get install debootstrap) and Debian's mirror.
# The chroot has no CUDA toolkit, so test.sh skips the pip line with its
# one-line reason.
#
# Usage: sudo scripts/fresh_debian.sh [--no-pypi] [--keep] [--base-cache] [--command CMD] [--dir DIR]
#   --no-pypi     PyPI unreachable inside (pypi.org and files.pythonhosted.org
#                 resolve to 127.0.0.9, where nothing listens), Debian's mirror
#                 still reachable: the cross-checks that need PyPI's packages
#                 must be skipped, each with one line
#   --keep        leave the chroot in place afterwards (default: removed)
#   --base-cache  keep the freshly debootstrapped system in
#                 /var/tmp/vit-fresh-debian-base.tar and start from it next
#                 time (saves the debootstrap; still bare)
#   --command CMD run CMD in /root/vit instead of `bash scripts/test.sh`
#                 (`bash scripts/demo.sh`, say)
#   --dir DIR     the chroot's folder (default /var/tmp/vit-fresh-debian-PID)
# Env: MIRROR (default http://deb.debian.org/debian)
set -euo pipefail
cd "$(dirname "$0")/.."
no_pypi=false keep=false base_cache=false command="bash scripts/test.sh"
dir=/var/tmp/vit-fresh-debian-$$
mirror=${MIRROR:-http://deb.debian.org/debian}
base_tar=/var/tmp/vit-fresh-debian-base.tar
die() { echo "fresh_debian: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --no-pypi) no_pypi=true ;;
    --keep) keep=true ;;
    --base-cache) base_cache=true ;;
    --command) [ $# -ge 2 ] || die "--command needs a command"; command=$2; shift ;;
    --dir) [ $# -ge 2 ] || die "--dir needs a folder"; dir=$2; shift ;;
    *) die "unknown option '$1' (known: --no-pypi, --keep, --base-cache, --command CMD, --dir DIR)" ;;
  esac
  shift
done
[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap and chroot)"
command -v debootstrap >/dev/null || die "needs debootstrap: apt-get install debootstrap"
[ ! -e "$dir" ] || die "$dir exists already (choose another with --dir)"

mounted=()
cleanup() {
  local m
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    m=${mounted[$i]}
    umount -l "$m" 2>/dev/null || true
  done
  if ! $keep && [ -d "$dir" ]; then
    # Only once nothing is mounted below it: rm must not reach the host's /dev.
    if ! grep -q " $dir/" /proc/mounts; then rm -rf "$dir"; fi
  fi
}
trap cleanup EXIT
mount_in() {  # TYPE-or-bind SOURCE TARGET
  mkdir -p "$dir/$3"
  if [ "$1" = bind ]; then mount --bind "$2" "$dir/$3"; else mount -t "$1" "$2" "$dir/$3"; fi
  mounted+=("$dir/$3")
}

start=$SECONDS
mkdir -p "$dir"
if $base_cache && [ -f "$base_tar" ]; then
  echo "fresh_debian: a bare Debian 12 from $base_tar"
  tar -C "$dir" -xf "$base_tar"
else
  echo "fresh_debian: debootstrap --variant=minbase bookworm $dir $mirror"
  debootstrap --variant=minbase bookworm "$dir" "$mirror" >"$dir.debootstrap.log" 2>&1 ||
    { tail -20 "$dir.debootstrap.log"; die "debootstrap failed (log: $dir.debootstrap.log)"; }
  rm -f "$dir.debootstrap.log"
  if $base_cache; then tar -C "$dir" -cf "$base_tar" .; fi
fi
echo "fresh_debian: a bare Debian 12 in $((SECONDS - start)) s"

cp /etc/resolv.conf "$dir/etc/resolv.conf"
# The host's own certificate authorities (/usr/local/share/ca-certificates),
# for a network that inspects TLS, as this project's machines do: Debian's
# ca-certificates takes them in when setup.sh installs it, and pip reads that
# bundle (PIP_CERT below) rather than its own.
extra_cas=false
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  mkdir -p "$dir/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$dir/usr/local/share/ca-certificates/"
  extra_cas=true
fi
if $no_pypi; then
  printf '127.0.0.9 pypi.org\n127.0.0.9 files.pythonhosted.org\n' >>"$dir/etc/hosts"
fi
mount_in proc proc /proc
mount_in sysfs sys /sys
mount_in bind /dev /dev
mount_in bind /dev/pts /dev/pts
mount_in tmpfs tmpfs /dev/shm

# The clone as it is now, at /root/vit.
mkdir -p "$dir/root/vit"
git ls-files -z --cached --others --exclude-standard |
  (while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done) |
  tar --null -T - -cf - | tar -C "$dir/root/vit" -xf -
cp -a .git "$dir/root/vit/.git"

echo "fresh_debian: in $dir, as root, in /root/vit: $command$($no_pypi && echo ' (PyPI blocked)')"
run_start=$SECONDS
status=0
pip_cert=()
$extra_cas && pip_cert=(PIP_CERT=/etc/ssl/certs/ca-certificates.crt)
chroot "$dir" /usr/bin/env -i HOME=/root TERM="${TERM:-dumb}" LANG=C.UTF-8 "${pip_cert[@]}" \
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  /bin/bash -c "cd /root/vit && $command" || status=$?
echo "fresh_debian: '$command' exited $status after $((SECONDS - run_start)) s" \
  "($((SECONDS - start)) s with the debootstrap)$($no_pypi && echo ', PyPI blocked')"
exit $status
