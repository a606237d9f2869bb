"""How answers are shown: terminal tables (`render`), self-contained reports (`report`), plots (`plots`).

Layer: present (docs/architecture.md): may import every layer below it (schema up to questions);
only the interfaces (cli, web, api) import it. Writing files is `planner.files` (schema layer),
tables of results `planner.frames` (evaluate layer), so that lower layers need not import this
package.
"""
