"""The CLI's error contract as tests read it: one line on stderr, starting "error: ", no traceback."""

from gcite.cli.main import main


def one_error_line(capsys, argv, status=2) -> str:
    assert main(argv) == status
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), captured.err
    assert "Traceback" not in captured.err and captured.out == ""
    return lines[0]
