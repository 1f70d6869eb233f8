"""Feature specs: what the LLM extracts, how answers are checked, and the core schema.

A *spec* lists the features an LLM should read off an item's text. Per feature it holds a
name, a type, the allowed values and an extraction instruction. Specs are stored as YAML
(``.yaml``/``.yml``) or JSON (``.json``) files with this layout::

    name: pmr_table9
    version: 1
    context: "Each item is one patient portal message ..."
    features:
      - name: symptom_trajectory
        type: categorical                  # categorical | ordinal | multi_hot | numeric
        values: [rapidly_worsening, worsening, stable, ...]
        instruction: "Identify explicit trajectory language ..."
      - name: message_actionability
        type: ordinal
        values: {0: none_or_fyi, 1: asynchronous_advice, ...}   # codes 0..L-1
        instruction: "..."
      - name: heart_rate
        type: numeric
        bounds: [20, 250]
        instruction: "..."

Ordinal values may be a mapping ``{code: label}`` (codes must be ``0 .. L-1``) or a list
(codes are the positions). The LLM answers with labels; the core encodes ordinal labels
to their codes (:class:`pbo_core.data.Schema`).

The same module builds the request (system/user prompts and the JSON schema of the
answer) and validates answers. Answers are never coerced: a value that is not exactly
allowed is an error that names the feature, the value and what was expected.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pbo_core.data import Feature, Schema
from pbo_core.errors import AnswerValidationError, SpecError

SpecType = Literal["categorical", "ordinal", "multi_hot", "numeric"]
SPEC_TYPES: tuple[str, ...] = ("categorical", "ordinal", "multi_hot", "numeric")

#: Version of the prompt templates in this module. Part of every cache key: change it
#: whenever the wording of :func:`build_messages` or :func:`schema_hint` changes.
PROMPT_VERSION = "extract-v1"

#: File name of the bundled Table 9 spec inside ``feature_extraction/specs``.
DEFAULT_SPEC_NAME = "pmr_table9.yaml"

_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True)
class FeatureSpec:
    """One feature to extract.

    Parameters
    ----------
    name
        Column name (lower-case snake_case).
    type
        ``"categorical"``, ``"ordinal"``, ``"multi_hot"`` or ``"numeric"``.
    instruction
        What the LLM is asked to extract.
    values
        Allowed values; for ordinal features in code order (code = position).
    bounds
        ``(low, high)`` for numeric features (optional; answers outside are invalid).
    label, description
        Display name and longer explanation (optional).
    """

    name: str
    type: SpecType
    instruction: str
    values: tuple[str, ...] = ()
    bounds: tuple[float, float] | None = None
    label: str = ""
    description: str = ""

    def __post_init__(self) -> None:
        where = f"feature {self.name!r}"
        if not isinstance(self.name, str) or not _NAME_RE.match(self.name):
            raise SpecError(f"{where}: name must be lower-case snake_case")
        if self.type not in SPEC_TYPES:
            raise SpecError(f"{where}: type {self.type!r} is not one of {SPEC_TYPES}")
        if not isinstance(self.instruction, str) or not self.instruction.strip():
            raise SpecError(f"{where}: an extraction instruction is required")
        object.__setattr__(self, "values", tuple(str(v) for v in self.values))
        if self.type == "numeric":
            if self.values:
                raise SpecError(f"{where}: numeric features take bounds, not values")
            if self.bounds is not None:
                lo, hi = (float(b) for b in self.bounds)
                if not lo <= hi:
                    raise SpecError(f"{where}: invalid bounds {self.bounds}")
                object.__setattr__(self, "bounds", (lo, hi))
        else:
            if self.bounds is not None:
                raise SpecError(f"{where}: only numeric features take bounds")
            if len(self.values) < (1 if self.type == "multi_hot" else 2):
                raise SpecError(f"{where}: a {self.type} feature needs allowed values")
            if len(set(self.values)) != len(self.values):
                raise SpecError(f"{where}: allowed values are not unique")
            if any(not v.strip() for v in self.values):
                raise SpecError(f"{where}: allowed values must be non-empty strings")

    # ------------------------------------------------------------------ conversion
    def to_feature(self) -> Feature:
        """The core :class:`~pbo_core.data.Feature` (ordinal levels in code order)."""
        kind = {"categorical": "categorical", "ordinal": "ordinal", "multi_hot": "multi_hot"}
        if self.type == "numeric":
            return Feature(
                self.name,
                "numeric",
                bounds=self.bounds,
                label=self.label,
                description=self.description or self.instruction,
            )
        return Feature(
            self.name,
            kind[self.type],  # type: ignore[arg-type]
            levels=self.values,
            label=self.label,
            description=self.description or self.instruction,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready representation (the spec file layout)."""
        d: dict[str, Any] = {"name": self.name, "type": self.type}
        if self.type == "ordinal":
            d["values"] = {i: v for i, v in enumerate(self.values)}
        elif self.type != "numeric":
            d["values"] = list(self.values)
        if self.bounds is not None:
            d["bounds"] = list(self.bounds)
        d["instruction"] = self.instruction
        if self.label:
            d["label"] = self.label
        if self.description:
            d["description"] = self.description
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, where: str = "spec") -> FeatureSpec:
        """Build from one entry of a spec file (see the module docstring)."""
        if not isinstance(d, Mapping):
            raise SpecError(f"{where}: a feature entry must be a mapping, got {d!r}")
        outer = where
        where = f"{where}: feature {d.get('name')!r}"
        unknown = set(d) - {
            "name",
            "type",
            "values",
            "bounds",
            "instruction",
            "label",
            "description",
        }
        if unknown:
            raise SpecError(f"{where}: unknown keys {sorted(unknown)}")
        for key in ("name", "type", "instruction"):
            if key not in d:
                raise SpecError(f"{where}: missing {key!r}")
        values = d.get("values") or ()
        if isinstance(values, Mapping):
            try:
                codes = sorted((int(k), str(v)) for k, v in values.items())
            except (TypeError, ValueError):
                raise SpecError(f"{where}: value codes must be integers") from None
            if [c for c, _ in codes] != list(range(len(codes))):
                raise SpecError(
                    f"{where}: value codes must be 0..{len(codes) - 1}, got {[c for c, _ in codes]}"
                )
            if d["type"] != "ordinal":
                raise SpecError(f"{where}: only ordinal features take a {{code: label}} mapping")
            values = tuple(v for _, v in codes)
        elif isinstance(values, str) or not isinstance(values, Iterable):
            raise SpecError(f"{where}: values must be a list (or a code mapping for ordinal)")
        bounds = d.get("bounds")
        if bounds is not None:
            if len(bounds) != 2:
                raise SpecError(f"{where}: bounds must be [low, high]")
            bounds = (float(bounds[0]), float(bounds[1]))
        try:
            return cls(
                name=d["name"],
                type=d["type"],
                instruction=d["instruction"],
                values=tuple(values),
                bounds=bounds,
                label=d.get("label", "") or "",
                description=d.get("description", "") or "",
            )
        except SpecError as e:
            raise SpecError(f"{outer}: {e}") from None

    # ------------------------------------------------------------------ answers
    def answer_schema(self) -> dict[str, Any]:
        """JSON schema of this feature's value in an answer."""
        if self.type in ("categorical", "ordinal"):
            return {"type": "string", "enum": list(self.values)}
        if self.type == "multi_hot":
            return {
                "type": "array",
                "items": {"type": "string", "enum": list(self.values)},
                "uniqueItems": True,
            }
        s: dict[str, Any] = {"type": "number"}
        if self.bounds is not None:
            s["minimum"], s["maximum"] = self.bounds
        return s

    def validate_value(self, value: Any) -> tuple[Any, str | None]:
        """Check one answered value; return ``(value, None)`` or ``(None, problem)``."""
        allowed = ", ".join(self.values)
        if self.type in ("categorical", "ordinal"):
            if not isinstance(value, str):
                return None, (
                    f"{self.name}: expected one string from [{allowed}], "
                    f"got {type(value).__name__} {value!r}"
                )
            if value not in self.values:
                return None, f"{self.name}: unknown value {value!r}; allowed: [{allowed}]"
            return value, None
        if self.type == "multi_hot":
            if not isinstance(value, list):
                return None, (
                    f"{self.name}: expected a list of strings from [{allowed}] "
                    f"(empty list for none), got {type(value).__name__} {value!r}"
                )
            bad = [v for v in value if not isinstance(v, str) or v not in self.values]
            if bad:
                return None, f"{self.name}: unknown value(s) {bad!r}; allowed: [{allowed}]"
            if len(set(value)) != len(value):
                return None, f"{self.name}: repeated values in {value!r}"
            order = {v: i for i, v in enumerate(self.values)}
            return sorted(value, key=order.__getitem__), None
        # numeric
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None, f"{self.name}: expected a number, got {type(value).__name__} {value!r}"
        x = float(value)
        if x != x or x in (float("inf"), float("-inf")):
            return None, f"{self.name}: expected a finite number, got {value!r}"
        if self.bounds is not None and not self.bounds[0] <= x <= self.bounds[1]:
            return None, f"{self.name}: {value!r} is outside the bounds {list(self.bounds)}"
        return x, None


@dataclass(frozen=True)
class Spec:
    """An ordered set of :class:`FeatureSpec` plus metadata.

    Parameters
    ----------
    features
        The features, in column order.
    name
        Spec name (shown in records).
    version
        Free-form version of the spec content.
    context
        One or two sentences describing an item to the LLM.
    """

    features: tuple[FeatureSpec, ...]
    name: str = "spec"
    version: str = "1"
    context: str = ""
    _by_name: dict[str, FeatureSpec] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        feats = tuple(self.features)
        object.__setattr__(self, "features", feats)
        object.__setattr__(self, "version", str(self.version))
        if not feats:
            raise SpecError(f"spec {self.name!r}: no features")
        names = [f.name for f in feats]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise SpecError(f"spec {self.name!r}: duplicate feature names {dup}")
        object.__setattr__(self, "_by_name", {f.name: f for f in feats})

    def __len__(self) -> int:
        return len(self.features)

    def __getitem__(self, name: str) -> FeatureSpec:
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"no feature {name!r} in spec; features are {self.names}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    @property
    def names(self) -> list[str]:
        """Feature names in order."""
        return [f.name for f in self.features]

    # ------------------------------------------------------------------ conversion
    def to_schema(self) -> Schema:
        """The core :class:`~pbo_core.data.Schema` of the extracted features."""
        return Schema(tuple(f.to_feature() for f in self.features))

    def subset(self, names: Iterable[str]) -> Spec:
        """Spec with only the named features (in spec order)."""
        keep = set(names)
        missing = keep - set(self.names)
        if missing:
            raise KeyError(f"no features {sorted(missing)} in spec; features are {self.names}")
        return replace(self, features=tuple(f for f in self.features if f.name in keep))

    def with_feature(self, feature: FeatureSpec) -> Spec:
        """Spec with ``feature`` appended (raises if the name is taken)."""
        if feature.name in self:
            raise SpecError(f"spec {self.name!r} already has a feature {feature.name!r}")
        return replace(self, features=(*self.features, feature))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready representation (the spec file layout)."""
        return {
            "name": self.name,
            "version": self.version,
            "context": self.context,
            "features": [f.to_dict() for f in self.features],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, source: str = "spec") -> Spec:
        """Build from the spec file layout (see the module docstring)."""
        if not isinstance(d, Mapping) or "features" not in d:
            raise SpecError(f"{source}: expected a mapping with a 'features' list")
        feats = d["features"]
        if not isinstance(feats, list):
            raise SpecError(f"{source}: 'features' must be a list")
        return cls(
            features=tuple(
                FeatureSpec.from_dict(f, where=f"{source}: features[{i}]")
                for i, f in enumerate(feats)
            ),
            name=str(d.get("name", "spec")),
            version=str(d.get("version", "1")),
            context=str(d.get("context", "") or ""),
        )

    def spec_hash(self) -> str:
        """SHA-256 (hex, 16 chars) of the canonical JSON of the spec: part of cache keys.

        Display-only fields (label, description) and the spec name are excluded, so
        renaming a spec does not invalidate cached extractions.
        """
        canon = {
            "context": self.context,
            "features": [
                {k: v for k, v in f.to_dict().items() if k not in ("label", "description")}
                for f in self.features
            ],
        }
        blob = json.dumps(canon, sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def dump(self, path: str | Path) -> Path:
        """Write the spec to ``path`` (YAML or JSON by suffix)."""
        path = Path(path)
        d = self.to_dict()
        if path.suffix.lower() in (".yaml", ".yml"):
            yaml = _yaml()
            text = yaml.safe_dump(d, sort_keys=False, allow_unicode=True, width=100)
        else:
            text = json.dumps(d, indent=2, ensure_ascii=False) + "\n"
        path.write_text(text, encoding="utf-8")
        return path

    # ------------------------------------------------------------------ answers
    def answer_json_schema(self) -> dict[str, Any]:
        """JSON schema of a complete answer: one required property per feature."""
        return {
            "type": "object",
            "properties": {f.name: f.answer_schema() for f in self.features},
            "required": self.names,
            "additionalProperties": False,
        }

    def validate_answer(self, answer: Any) -> dict[str, Any]:
        """Check a parsed answer against the spec.

        Returns
        -------
        dict
            ``{feature: value}`` in spec order (multi-hot lists in spec value order).

        Raises
        ------
        AnswerValidationError
            Listing every problem: not an object, missing fields, unknown fields, wrong
            types, values outside the allowed set or bounds.
        """
        if not isinstance(answer, dict):
            raise AnswerValidationError(
                [f"the answer must be a JSON object, got {type(answer).__name__}"]
            )
        errors: list[str] = []
        missing = [n for n in self.names if n not in answer]
        if missing:
            errors.append(f"missing field(s) {missing}")
        extra = [k for k in answer if k not in self._by_name]
        if extra:
            errors.append(f"unknown field(s) {extra}; the fields are {self.names}")
        out: dict[str, Any] = {}
        for f in self.features:
            if f.name not in answer:
                continue
            value, err = f.validate_value(answer[f.name])
            if err:
                errors.append(err)
            else:
                out[f.name] = value
        if errors:
            raise AnswerValidationError(errors)
        return out

    def parse_answer(self, content: str | None) -> dict[str, Any]:
        """Parse the text of an answer as JSON and validate it (see :meth:`validate_answer`).

        One surrounding Markdown code fence (```json ... ```) is removed; nothing else is
        repaired.
        """
        return self.validate_answer(parse_json_content(content))


def parse_json_content(content: str | None) -> Any:
    """Parse a model's JSON answer, stripping one surrounding Markdown code fence.

    Raises
    ------
    AnswerValidationError
        When the content is empty or not valid JSON.
    """
    if content is None or not content.strip():
        raise AnswerValidationError(["the answer is empty; reply with one JSON object"])
    text = content.strip()
    m = re.fullmatch(r"```(?:json|JSON)?\s*(.*?)\s*```", text, flags=re.DOTALL)
    if m:
        text = m.group(1)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        snippet = text if len(text) <= 200 else text[:200] + "..."
        raise AnswerValidationError(
            [
                f"the answer is not valid JSON ({e.msg} at line {e.lineno}, "
                f"column {e.colno}): {snippet!r}"
            ]
        ) from None


# ---------------------------------------------------------------------- files
def _yaml() -> Any:
    try:
        import yaml
    except ImportError:  # pragma: no cover - depends on the environment
        raise SpecError("reading or writing YAML specs needs PyYAML (pip install pyyaml)") from None
    return yaml


def default_spec_path() -> Path:
    """Path of the bundled Table 9 spec (``feature_extraction/specs/pmr_table9.yaml``)."""
    return Path(str(resources.files("feature_extraction") / "specs" / DEFAULT_SPEC_NAME))


def load_spec(path: str | Path | None = None) -> Spec:
    """Read a spec file (YAML or JSON); ``None`` loads the bundled Table 9 spec.

    Raises
    ------
    SpecError
        When the file is missing, unparsable or malformed (the message names the file).
    """
    p = default_spec_path() if path is None else Path(path)
    if not p.is_file():
        raise SpecError(f"spec file {str(p)!r} does not exist")
    text = p.read_text(encoding="utf-8")
    try:
        if p.suffix.lower() in (".yaml", ".yml"):
            data = _yaml().safe_load(text)
        else:
            data = json.loads(text)
    except SpecError:
        raise
    except Exception as e:  # yaml.YAMLError / json.JSONDecodeError
        raise SpecError(f"{p}: cannot parse: {e}") from None
    return Spec.from_dict(data, source=str(p))


def table9_spec() -> Spec:
    """The eleven PMR features of DT-PBO Table 9 (bundled spec)."""
    return load_spec(None)


# ---------------------------------------------------------------------- prompts
_SYSTEM_TEMPLATE = """\
You are a careful clinical information-extraction assistant. You do NOT decide which \
message is more urgent and you do not give medical advice: you only read one item and \
report the features listed below, exactly as instructed.

{context}

Features to extract:
{features}

Rules:
- Use only the allowed values, spelled exactly as given.
- Base every value on what the item states or strongly implies; do not invent facts.
- Reply with one JSON object with exactly these fields: {names}. No other text."""


def _describe_feature(f: FeatureSpec) -> str:
    if f.type == "categorical":
        kind = "exactly one of"
        values = ", ".join(f.values)
    elif f.type == "ordinal":
        kind = "exactly one of (ordered from lowest to highest)"
        values = ", ".join(f.values)
    elif f.type == "multi_hot":
        kind = "a list of zero or more of"
        values = ", ".join(f.values)
    else:
        kind = "a number"
        values = f"between {f.bounds[0]:g} and {f.bounds[1]:g}" if f.bounds else ""
    return f"- {f.name}: {f.instruction.strip()}\n  Answer: {kind} {values}".rstrip()


def system_prompt(spec: Spec) -> str:
    """The system prompt listing every feature, its instruction and allowed values."""
    return _SYSTEM_TEMPLATE.format(
        context=spec.context.strip() or "Each item is a short text.",
        features="\n".join(_describe_feature(f) for f in spec.features),
        names=", ".join(spec.names),
    )


def user_prompt(text: str) -> str:
    """The user prompt carrying one item's text."""
    return f"Item:\n<<<\n{text.strip()}\n>>>\n\nReturn the JSON object for this item."


def build_messages(spec: Spec, text: str) -> list[dict[str, str]]:
    """Chat messages of one extraction request (system + user)."""
    return [
        {"role": "system", "content": system_prompt(spec)},
        {"role": "user", "content": user_prompt(text)},
    ]


def schema_hint(json_schema: Mapping[str, Any]) -> str:
    """Text appended to the system prompt when the server only supports ``json_object``."""
    return (
        "\n\nYour reply must be a single JSON object that validates against this JSON "
        "schema:\n" + json.dumps(json_schema, ensure_ascii=False)
    )


def feedback_message(errors: Sequence[str]) -> str:
    """User message asking for a corrected answer after a validation failure."""
    lines = "\n".join(f"- {e}" for e in errors)
    return (
        "Your previous answer was invalid:\n"
        f"{lines}\n"
        "Reply again with one corrected JSON object that uses only the allowed fields and "
        "values."
    )


def text_hash(text: str) -> str:
    """SHA-256 (hex, 16 chars) of an item's text, part of cache keys."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
