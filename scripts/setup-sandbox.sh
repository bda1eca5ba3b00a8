#!/usr/bin/env bash
# Make `!` cells work: a Docker engine that answers and the sandbox image Co is set to use.
#
# Starts an installed engine (never installs one). When the configured image is missing
# and cannot be pulled (no registry reachable) and it is the default, builds the local
# image (scripts/build-sandbox-image.sh: debootstrap, root the first time) and writes
# "sandbox_image" into the user settings file so the kernel uses it. Each problem is one
# line; exits non-zero when `!` cells will not run in Docker. Used by scripts/start.sh.
# CO_LOCAL_SANDBOX_IMAGE names the local image (default co-sandbox:bookworm).
set -euo pipefail
cd "$(dirname "$0")/.."

LOCAL_IMAGE="${CO_LOCAL_SANDBOX_IMAGE:-co-sandbox:bookworm}"
say() { printf 'setup: %s\n' "$*" >&2; }

# The settings the kernel will read for the tour (notebooks/ is its project folder).
read -r mode image default < <(.venv/bin/python - <<'PY'
from pathlib import Path
from co_kernel.config import Settings, load_settings
s = load_settings(Path("notebooks")).settings
print(s.sandbox, s.sandbox_image, Settings.model_fields["sandbox_image"].default)
PY
)
[ "$mode" = subprocess ] && { say "sandbox = subprocess: \`!\` cells run on this machine, no Docker needed"; exit 0; }

if ! started=$(scripts/start-docker.sh --no-install 2>&1); then
    why=${started##*$'\n'}
    say "no Docker engine answers, so \`!\` cells will not run: ${why#start-docker: error: }"
    exit 1
fi

docker image inspect "$image" >/dev/null 2>&1 && exit 0
say "pulling the sandbox image $image"
docker pull -q "$image" >/dev/null 2>&1 && exit 0

if [ "$image" != "$default" ]; then
    say "the sandbox image $image is missing and cannot be pulled: pull or build it, or set sandbox_image to an image you have"
    exit 1
fi
say "cannot pull $image (no registry reachable?): building the local image $LOCAL_IMAGE instead"
if ! scripts/build-sandbox-image.sh "$LOCAL_IMAGE"; then
    say "building $LOCAL_IMAGE failed: run sudo scripts/build-sandbox-image.sh $LOCAL_IMAGE, then scripts/start.sh again"
    exit 1
fi
settings_file=$(.venv/bin/python - "$LOCAL_IMAGE" <<'PY'
import json, os, sys
from co_kernel.config import paths
path = paths().settings_file
data = json.loads(path.read_text()) if path.exists() else {}
data["sandbox_image"] = sys.argv[1]
path.parent.mkdir(parents=True, exist_ok=True)
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # it may hold keys
with os.fdopen(fd, "w") as f:
    json.dump(data, f, indent=2)
print(path)
PY
)
say "sandbox_image = $LOCAL_IMAGE written to $settings_file"
