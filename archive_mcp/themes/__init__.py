"""Themes, by stage: `tag` (from seeds or confirmed turns to a theme's members), `discover`
(cluster a workspace's turns into suggested themes) and `trace` (a theme as a timeline and its
story). Beside them the store every stage reads and writes (`store.py`), the noise rules that keep
commands, compactions and errors out of every stage (`noise.py`) and the class-based TF-IDF labels
discovery and the trace both use (`labels.py`). Each stage's rules are a frozen value
(`TagRules`, `DiscoveryRules`, `TraceRules`) passed in, with the shipped one as the default."""
