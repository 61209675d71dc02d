"""MkDocs hooks (mkdocs.yml `hooks:`): the reference pages generated from the code, at every build.

- `reference/settings.md` and `reference/commands.md`: `python -m jobsched_project.reference`,
  in a process of its own (its environment holds none of the documented settings, so the
  defaults shown are the code's);
- `reference/api.md`: the OpenAPI schema that process wrote, rendered to Markdown by
  essentials-openapi (neoteroi-mkdocs' OAD renderer) at build time, so the page needs no
  network and no script when it is read; `reference/openapi.json` beside it, to download;
- `changelog.md`: CHANGELOG.md at the repository's root.

Nothing generated is committed, so nothing can drift.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent
_generated: dict[str, str] = {}

API_INTRO = """# The API

Generated from the OpenAPI schema the API serves at `/v1/schema` (a running server also shows
it as pages: `/v1/docs`, Swagger UI, and `/v1/redoc`). The schema as a file:
[openapi.json](openapi.json). Errors are `application/problem+json`: [problem types](problems.md).

"""


def _in_tag_order(schema: dict) -> dict:
    """The paths grouped as the schema's tags are ordered (tasks first), not alphabetically."""
    order = {tag["name"]: position for position, tag in enumerate(schema.get("tags", []))}

    def rank(item: tuple[str, dict]) -> int:
        tags = [tag for op in item[1].values() if isinstance(op, dict) for tag in op.get("tags", [])]
        return min((order.get(tag, len(order)) for tag in tags), default=len(order))

    return {**schema, "paths": dict(sorted(schema["paths"].items(), key=rank))}


def _render_api(schema: dict) -> str:
    from openapidocs.mk.v3 import OpenAPIV3DocumentationHandler

    schema = _in_tag_order(schema)
    return API_INTRO + OpenAPIV3DocumentationHandler(schema, style="MKDOCS").write()


def on_pre_build(config, **kwargs) -> None:
    with tempfile.TemporaryDirectory(prefix="jobsched-reference-") as out:
        subprocess.run([sys.executable, "-m", "jobsched_project.reference", out], cwd=ROOT, check=True)
        out_dir = Path(out)
        schema_text = (out_dir / "openapi.json").read_text()
        _generated["reference/settings.md"] = (out_dir / "settings.md").read_text()
        _generated["reference/commands.md"] = (out_dir / "commands.md").read_text()
    _generated["reference/openapi.json"] = schema_text
    _generated["reference/api.md"] = _render_api(json.loads(schema_text))
    changelog = (ROOT / "CHANGELOG.md").read_text()
    # Links in CHANGELOG.md point into docs/ from the root; on the site they are siblings.
    _generated["changelog.md"] = changelog.replace("](docs/", "](")


def on_files(files: Files, config, **kwargs) -> Files:
    for src_uri, content in _generated.items():
        files.append(File.generated(config, src_uri, content=content))
    return files
