"""The ``co-kernel`` command line: install the kernelspec, report status, keep secrets, view
telemetry."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from importlib import resources
from pathlib import Path

__all__ = ["install_kernelspec", "main"]

KERNEL_NAME = "co"
DISPLAY_NAME = "Co"


def kernelspec_dict(python: str | None = None) -> dict[str, object]:
    # -P (Python 3.11+): `-m` would put the working directory, the notebook's folder, first
    # on sys.path, so a `nh3.py` or `co_kernel/` planted beside a notebook would run in the
    # kernel before any of Co's code could stop it.
    return {
        "argv": [python or sys.executable, "-P", "-m", "co_kernel", "-f", "{connection_file}"],
        "display_name": DISPLAY_NAME,
        "language": "co",
        "interrupt_mode": "signal",
        "env": {"PYDEVD_DISABLE_FILE_VALIDATION": "1"},
        "metadata": {"debugger": False},
    }


def install_kernelspec(*, user: bool = False, prefix: str | None = None) -> str:
    """Write the kernelspec (kernel.json + logos) and register it; returns its folder."""
    from jupyter_client.kernelspec import KernelSpecManager

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / KERNEL_NAME
        folder.mkdir()
        (folder / "kernel.json").write_text(json.dumps(kernelspec_dict(), indent=2))
        for name in ("logo-32x32.png", "logo-64x64.png", "logo-svg.svg"):
            source = resources.files("co_kernel") / "resources" / name
            with resources.as_file(source) as path:
                shutil.copy(path, folder / name)
        return KernelSpecManager().install_kernel_spec(
            str(folder), KERNEL_NAME, user=user, prefix=prefix
        )


def _cmd_install(args: argparse.Namespace) -> int:
    prefix = sys.prefix if args.sys_prefix else args.prefix
    where = install_kernelspec(user=args.user, prefix=prefix)
    print(f"Installed the Co kernelspec '{KERNEL_NAME}' in {where}")
    return 0


def _cmd_status(args: argparse.Namespace) -> int:
    from ..status import collect_status, format_status

    report = collect_status(Path(args.project).resolve())
    print(format_status(report, markdown=False))
    return 0


def _cmd_google_auth(args: argparse.Namespace) -> int:
    from ..config import load_settings
    from ..exceptions import ConfigError
    from ..tools.google import run_auth_flow

    loaded = load_settings(Path(args.project).resolve())
    for problem in loaded.problems:
        print(f"settings: {problem}", file=sys.stderr)
    try:
        saved = run_auth_flow(loaded.settings, open_browser=not args.no_browser, port=args.port)
    except ConfigError as exc:
        print(f"co-kernel google auth: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("co-kernel google auth: cancelled; nothing was saved.", file=sys.stderr)
        return 130
    except Exception as exc:  # the flow's own failures: refused consent, token exchange
        print(f"co-kernel google auth: sign-in failed: {exc}", file=sys.stderr)
        return 1
    print(f"Signed in. Token saved in {saved}.")
    print("Restart running Co kernels to register the Google tools.")
    return 0


def _cmd_trust(args: argparse.Namespace) -> int:
    from ..config import folder_trust, forget_folder, load_settings, trust_folder, trust_notice
    from ..config import paths as co_paths

    folder = Path(args.folder).resolve()
    if not folder.is_dir():
        print(f"co-kernel trust: {folder} is not a folder", file=sys.stderr)
        return 2
    if args.revoke:
        found = forget_folder(folder)
        print(
            f"{folder}: " + ("no longer trusted." if found else "was not trusted; nothing changed.")
        )
        return 0
    loaded = load_settings(folder)
    trust = loaded.trust or folder_trust(folder)
    if args.show or trust.status in ("nothing", "refused"):
        if trust.status == "trusted":
            print(f"{folder}: trusted ({trust.source}).")
        elif trust.status == "nothing" and args.show:
            print(f"{folder}: brings no Co settings or files.")
        elif trust.status == "nothing":
            # Still worth a record: %%python imports the folder's modules only once trusted.
            trust_folder(folder, {})
            print(
                f"{folder}: brings no Co settings or files; trusted, so %%python imports its modules."
            )
        else:
            notice = trust_notice(trust, loaded.held, co_paths().settings_file, can_ask=False)
            print(notice.replace("**", ""))
        return 0 if args.show or trust.status == "nothing" else 1
    if not args.yes:
        notice = trust_notice(trust, loaded.held, co_paths().settings_file, can_ask=False)
        print(notice.replace("**", ""))
        if not sys.stdin.isatty():
            print(
                "co-kernel trust: not a terminal; add --yes to trust it as shown.", file=sys.stderr
            )
            return 1
        if input("Trust this folder? [y/N] ").strip().lower() not in ("y", "yes"):
            print("Not trusted.")
            return 1
    trust_folder(folder, trust.files)
    print(f"{folder}: trusted as its files are now. `co-kernel trust --revoke` withdraws it.")
    return 0


def _cmd_scrub(args: argparse.Namespace) -> int:
    from ..exceptions import ScrubError
    from ..frontend import scrub_notebook

    failed = False
    for name in args.notebooks:
        try:
            changed = scrub_notebook(Path(name))
        except ScrubError as exc:
            print(f"co-kernel scrub: {exc}", file=sys.stderr)
            failed = True
            continue
        if changed:
            print(f"{name}: {changed} output(s) re-rendered as safe HTML")
        else:
            print(f"{name}: nothing to change")
    return 2 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="co-kernel", description="Co, the notebook AI kernel")
    sub = parser.add_subparsers(dest="command", required=True)
    p_install = sub.add_parser("install", help="register the Co kernelspec with Jupyter")
    where = p_install.add_mutually_exclusive_group()
    where.add_argument("--user", action="store_true", help="install for the current user")
    where.add_argument("--sys-prefix", action="store_true", help="install into this environment")
    where.add_argument("--prefix", help="install under this prefix")
    p_install.set_defaults(func=_cmd_install)
    p_status = sub.add_parser("status", help="settings, model, sandbox and stores at a glance")
    p_status.add_argument(
        "--project", default=".", help="the notebook folder (for .co/settings.json)"
    )
    p_status.set_defaults(func=_cmd_status)
    p_scrub = sub.add_parser(
        "scrub",
        help="rewrite the outputs an older Co saved in notebooks as safe HTML, remote "
        "images as click-to-load placeholders",
        description="Older Co versions saved answers as Markdown, which a viewer that trusts "
        "the notebook (nbconvert's HTML export, a notebook host) renders with any HTML in "
        "them, and as HTML whose remote images every viewer loads on opening. This "
        "rewrites those outputs, and only those, as Co writes them now.",
    )
    p_scrub.add_argument("notebooks", nargs="+", metavar="NOTEBOOK", help="an .ipynb file")
    p_scrub.set_defaults(func=_cmd_scrub)
    p_trust = sub.add_parser(
        "trust",
        help="trust a notebook folder, so its .co/ settings and files apply (or --show, --revoke)",
    )
    p_trust.add_argument("folder", nargs="?", default=".", help="the folder (default: here)")
    group = p_trust.add_mutually_exclusive_group()
    group.add_argument("--show", action="store_true", help="say whether it is trusted and why")
    group.add_argument("--revoke", action="store_true", help="withdraw your trust")
    p_trust.add_argument("--yes", action="store_true", help="trust it as shown, without asking")
    p_trust.set_defaults(func=_cmd_trust)
    p_google = sub.add_parser("google", help="Google Drive, Gmail and Calendar sign-in")
    google_sub = p_google.add_subparsers(dest="google_command", required=True)
    p_auth = google_sub.add_parser(
        "auth", help="sign in through the browser and save the token for Co's Google tools"
    )
    p_auth.add_argument(
        "--no-browser", action="store_true", help="print the address instead of opening it"
    )
    p_auth.add_argument(
        "--port", type=int, default=0, help="local port for Google's redirect (0: any free)"
    )
    p_auth.add_argument(
        "--project", default=".", help="the notebook folder (for .co/settings.json)"
    )
    p_auth.set_defaults(func=_cmd_google_auth)
    from ..config import add_secrets_commands
    from ..telemetry import add_telemetry_commands

    add_secrets_commands(sub)

    add_telemetry_commands(sub)
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    raise SystemExit(main())
