"""python -m gcite COMMAND …"""

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gcite", description="G-Cite command line")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("demo", help="run the merge node on the built-in building-assistant sample")
    commands.add_parser("sync-schema", help="write the models' item schemas into the tools' output_schema")
    pack = commands.add_parser("package", help="validate the plugin and write dist/<name>-<version>.difypkg")
    pack.add_argument("--out", default="dist", help="output directory (default: dist)")
    pack.add_argument("--no-dsl-update", action="store_true", help="do not rewrite the dependency in dsl/*.yml")
    pre = commands.add_parser("prefilter", help="print Knowledge Retrieval metadata_filtering_conditions for roles")
    pre.add_argument("--acl-field", default="access_roles", help="document metadata field holding the roles")
    pre.add_argument("--roles", help="literal conditions for these roles (comma-separated)")
    pre.add_argument("--slots", type=int, default=3, help="templated conditions with this many role slots")
    pre.add_argument("--slot-node", default="acl_roles", help="id of the Code node running nodes/acl_prefilter.py")
    pre.add_argument("--missing-acl", choices=("visible", "hidden"), default="visible")
    args = parser.parse_args(argv)

    if args.command == "demo":
        from gcite import demo

        demo.run(sys.stdout)
    elif args.command == "package":
        return package_command(args)
    elif args.command == "prefilter":
        import yaml

        from gcite import prefilter

        if args.roles is not None:
            roles = [r.strip() for r in args.roles.split(",") if r.strip()]
            conditions = prefilter.conditions_for_roles(args.acl_field, roles, args.missing_acl)
        else:
            selectors = [f"{{{{#{args.slot_node}.role_{n}#}}}}" for n in range(1, args.slots + 1)]
            conditions = prefilter.templated_conditions(args.acl_field, selectors, args.missing_acl)
        print(yaml.safe_dump({"metadata_filtering_mode": "manual", "metadata_filtering_conditions": conditions},
                             allow_unicode=True, sort_keys=False), end="")
    elif args.command == "sync-schema":
        from gcite import schema_sync

        changed = schema_sync.sync()
        print("updated: " + ", ".join(changed) if changed else "schemas already in step")
    return 0


def package_command(args: argparse.Namespace) -> int:
    from gcite import ROOT
    from gcite.package import PackageError, build, update_dsl_dependencies

    try:
        built = build(ROOT, ROOT / args.out)
    except PackageError as error:
        for problem in error.problems:
            print(f"error: {problem}", file=sys.stderr)
        print(f"no package written ({len(error.problems)} problem(s))", file=sys.stderr)
        return 1
    print(f"package:    {built.path.relative_to(ROOT)}")
    print(f"identifier: {built.identifier}")
    print(f"size:       {built.size:,} bytes ({built.size / 1024:.1f} KB; {built.uncompressed:,} bytes uncompressed, "
          f"{len(built.files)} files)")
    if not args.no_dsl_update:
        for path in update_dsl_dependencies(ROOT / "dsl", built.identifier):
            print(f"updated dependency in {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
