from archive_mcp.cli.main import run

if __name__ == "__main__":  # spawned worker processes (refine, offload) must not run the CLI again
    run()
