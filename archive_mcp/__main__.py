from archive_mcp.cli.main import run

run()
