#!/usr/bin/env bash
# Build a local sandbox image (default co-sandbox-test:bookworm) without a registry.
# scripts/test.sh builds the test image; scripts/setup-sandbox.sh builds co-sandbox:bookworm
# for `!` cells when python:3.12-slim cannot be pulled.
#
# debootstrap a minimal Debian bookworm root filesystem with python3 and procps,
# then `docker import` it. The rootfs tarball is cached under
# ${XDG_CACHE_HOME:-$HOME/.cache}/co-kernel/ so a rebuild on the same machine
# only re-imports it. Does nothing when the image already exists.
# Needs root (debootstrap) and a running engine (scripts/start-docker.sh).
#
# Usage: scripts/build-sandbox-image.sh [IMAGE]    (FORCE=1 rebuilds the rootfs)
set -euo pipefail

IMAGE="${1:-co-sandbox-test:bookworm}"
SUITE=bookworm
PACKAGES=python3,procps
CACHE_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/co-kernel"
TARBALL="$CACHE_DIR/sandbox-rootfs-$SUITE-${PACKAGES//,/-}.tar"

say() { printf 'build-sandbox-image: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

docker info >/dev/null 2>&1 || die "the Docker engine is not answering; run scripts/start-docker.sh first"

if [ -z "${FORCE:-}" ] && docker image inspect "$IMAGE" >/dev/null 2>&1; then
    say "$IMAGE already exists; nothing to do."
    exit 0
fi

# The mirror apt already uses (deb822 .sources or one-line .list), so the
# build works wherever apt does, including behind a local mirror.
mirror() {
    local uri
    uri=$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null \
        | awk '{print $2}' | grep -v -- '-security' | head -n1 || true)
    if [ -z "$uri" ]; then
        uri=$(grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
            | grep -E " ($SUITE|stable)( |$)" | grep -v -- '-security' \
            | sed -E 's/^deb (\[[^]]*\] )?//' | awk '{print $1}' | head -n1 || true)
    fi
    echo "${uri:-http://deb.debian.org/debian}"
}

if [ -n "${FORCE:-}" ] || [ ! -s "$TARBALL" ]; then
    [ "$(id -u)" -eq 0 ] || die "debootstrap needs root; re-run with sudo"
    if ! command -v debootstrap >/dev/null 2>&1; then
        say "Installing debootstrap with apt-get..."
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -q
        apt-get install -y -q --no-install-recommends debootstrap
    fi
    MIRROR=$(mirror)
    mkdir -p "$CACHE_DIR"
    ROOTFS=$(mktemp -d "$CACHE_DIR/rootfs.XXXXXX")
    trap 'rm -rf "$ROOTFS" "$TARBALL.tmp"' EXIT
    say "debootstrap $SUITE (+$PACKAGES) from $MIRROR..."
    debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$ROOTFS" "$MIRROR" \
        >"$CACHE_DIR/debootstrap.log" 2>&1 \
        || { tail -n 20 "$CACHE_DIR/debootstrap.log" >&2; die "debootstrap failed (log: $CACHE_DIR/debootstrap.log)"; }
    # Trim what a sandbox never needs: apt lists, caches, docs and locales.
    rm -rf "$ROOTFS"/var/lib/apt/lists/* "$ROOTFS"/var/cache/apt/*.bin \
        "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/usr/share/doc/* \
        "$ROOTFS"/usr/share/man/* "$ROOTFS"/usr/share/info/* "$ROOTFS"/usr/share/locale/* \
        "$ROOTFS"/var/log/*.log "$ROOTFS"/var/log/apt/*
    tar --numeric-owner -C "$ROOTFS" -cf "$TARBALL.tmp" .
    mv "$TARBALL.tmp" "$TARBALL"
    rm -rf "$ROOTFS"
    trap - EXIT
else
    say "Using cached rootfs $TARBALL"
fi

say "Importing $TARBALL as $IMAGE..."
docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'CMD ["/bin/bash"]' \
    "$TARBALL" "$IMAGE" >/dev/null
say "Built $IMAGE ($(docker image inspect --format '{{.Size}}' "$IMAGE" | awk '{printf "%.0f MB", $1/1e6}'))."
