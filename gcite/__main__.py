"""python -m gcite COMMAND …"""

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gcite", description="G-Cite command line")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("demo", help="run the merge node on the built-in building-assistant sample")
    commands.add_parser("sync-schema", help="write the models' item schemas into the tools' output_schema")
    args = parser.parse_args(argv)

    if args.command == "demo":
        from gcite import demo

        demo.run(sys.stdout)
    elif args.command == "sync-schema":
        from gcite import schema_sync

        changed = schema_sync.sync()
        print("updated: " + ", ".join(changed) if changed else "schemas already in step")
    return 0


if __name__ == "__main__":
    sys.exit(main())
