"""Where archive state lives and which workspace a path belongs to."""

if (
    __name__ != "archive_mcp.workspaces"
):  # one module identity: the repo's `workspaces/` installs as archive_mcp.workspaces
    raise ImportError(
        f"import archive_mcp.workspaces, not {__name__} (pip install -e . maps workspaces/ into the package)"
    )


from .atomic import (
    atomic_file,
    atomic_write_bytes,
    atomic_write_json,
    atomic_write_text,
    clean_orphans,
    held_elsewhere,
    lock_holder,
    locked,
    need_file,
    read_json,
    write_holder,
)
from .home import (
    archive_home,
    claude_config_dir,
    claude_config_dirs,
    cline_dir,
    codex_home,
    config_dir,
    copilot_home,
    crush_config_dir,
    crush_data_dir,
    cursor_home,
    default_source_roots,
    editor_extension_dirs,
    editor_user_dir,
    factory_dir,
    gemini_dir,
    goose_config_dir,
    goose_dir,
    kilo_config_dir,
    kimi_code_home,
    kimi_share_dir,
    opencode_config_dir,
    qwen_settings_dir,
)
from .ids import canonical_path, is_workspace_id, kimi_code_key, safe_id, workspace_id
from .registry import (
    PRIVATE_MARKER,
    PRIVATE_UMASK,
    Registry,
    Workspace,
    WorkspaceError,
    merge_command,
    private_tree,
    private_umask,
)
from .worktrees import worktree_home

__all__ = [
    "PRIVATE_MARKER",
    "PRIVATE_UMASK",
    "Registry",
    "Workspace",
    "WorkspaceError",
    "archive_home",
    "atomic_file",
    "atomic_write_bytes",
    "atomic_write_json",
    "atomic_write_text",
    "write_holder",
    "canonical_path",
    "claude_config_dir",
    "claude_config_dirs",
    "cline_dir",
    "clean_orphans",
    "codex_home",
    "config_dir",
    "copilot_home",
    "crush_config_dir",
    "crush_data_dir",
    "cursor_home",
    "default_source_roots",
    "editor_extension_dirs",
    "editor_user_dir",
    "factory_dir",
    "goose_config_dir",
    "goose_dir",
    "gemini_dir",
    "kilo_config_dir",
    "is_workspace_id",
    "kimi_code_home",
    "kimi_code_key",
    "kimi_share_dir",
    "lock_holder",
    "held_elsewhere",
    "locked",
    "merge_command",
    "need_file",
    "opencode_config_dir",
    "private_tree",
    "private_umask",
    "qwen_settings_dir",
    "read_json",
    "safe_id",
    "workspace_id",
    "worktree_home",
]
