"""One target under atheris (libFuzzer): `python -m fuzz.atheris_target TARGET [libFuzzer flags] [corpus dirs]`."""

import sys

import atheris

with atheris.instrument_imports(include=["citations", "gcite", "fuzz"]):
    from fuzz.targets import ALL_TARGETS


def main() -> None:
    target = ALL_TARGETS[sys.argv[1]]
    atheris.Setup([sys.argv[0]] + sys.argv[2:], target)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
