"""Generator of the bundled JSON-output tasks (`data/json_extract.jsonl`).

The model reads a short record written in prose and answers with a JSON object holding
the requested fields. Each task carries a JSON Schema (what the format component checks)
and the expected values (what completion checks, field by field). Seeded;
`python -m rlvr.tasks.generators.jsongen` rewrites the file byte for byte.

Difficulty: 1 = two fields, 2 = four fields with types (integer, boolean), 3 = a nested
object and a list.
"""

from __future__ import annotations

import random
from typing import Any

from rlvr.tasks.loader import BUNDLED_DIR, write_tasks
from rlvr.types import Task

DATA = BUNDLED_DIR / "json_extract.jsonl"
_FIRST = ["Maria", "Tomas", "Aiko", "Omar", "Lucia", "Pavel", "Nia", "Jonas", "Priya", "Felix", "Sara", "Mateo"]
_LAST = ["Lopez", "Novak", "Tanaka", "Haddad", "Rossi", "Ivanov", "Okafor", "Berg", "Shah", "Weber", "Costa"]
_CITIES = ["Porto", "Lyon", "Osaka", "Tunis", "Turin", "Brno", "Lagos", "Malmo", "Pune", "Graz", "Quito"]
_JOBS = ["nurse", "engineer", "teacher", "chef", "pilot", "designer", "farmer", "lawyer"]
_SKILLS = ["python", "welding", "spanish", "accounting", "piano", "driving", "first aid", "sql"]
_SUFFIX = "\n\nAnswer with only a JSON object, inside <answer></answer> tags."


def _schema(props: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": sorted(props), "additionalProperties": False}


def _d1(r: random.Random) -> tuple[str, dict[str, Any], dict[str, Any]]:
    name, city = f"{r.choice(_FIRST)} {r.choice(_LAST)}", r.choice(_CITIES)
    text = f"Record: {name} moved to {city} last spring.\nExtract the fields `name` and `city`."
    return text, _schema({"name": {"type": "string"}, "city": {"type": "string"}}), {"name": name, "city": city}


def _d2(r: random.Random) -> tuple[str, dict[str, Any], dict[str, Any]]:
    name, age, job = f"{r.choice(_FIRST)} {r.choice(_LAST)}", r.randint(19, 70), r.choice(_JOBS)
    remote = r.random() < 0.5
    where = "works from home" if remote else "works on site"
    text = (
        f"Record: {name} is a {age}-year-old {job} who {where}.\n"
        "Extract `name` (string), `age` (integer), `job` (string) and `remote` (boolean)."
    )
    schema = _schema(
        {
            "name": {"type": "string"},
            "age": {"type": "integer"},
            "job": {"type": "string"},
            "remote": {"type": "boolean"},
        }
    )
    return text, schema, {"name": name, "age": age, "job": job, "remote": remote}


def _d3(r: random.Random) -> tuple[str, dict[str, Any], dict[str, Any]]:
    name, city = f"{r.choice(_FIRST)} {r.choice(_LAST)}", r.choice(_CITIES)
    zipc = f"{r.randint(1000, 99999)}"
    skills = r.sample(_SKILLS, r.randint(2, 3))
    text = (
        f"Record: {name} lives in {city} (postal code {zipc}) and lists {', '.join(skills[:-1])} "
        f"and {skills[-1]} as skills.\n"
        "Extract `name`, `address` (an object with `city` and `postal_code`, both strings) and "
        "`skills` (a list of strings, in the order given)."
    )
    schema = _schema(
        {
            "name": {"type": "string"},
            "address": _schema({"city": {"type": "string"}, "postal_code": {"type": "string"}}),
            "skills": {"type": "array", "items": {"type": "string"}},
        }
    )
    return text, schema, {"name": name, "address": {"city": city, "postal_code": zipc}, "skills": skills}


PER_LEVEL = 40


def build_tasks(seed: int = 7) -> list[Task]:
    r = random.Random(seed)
    tasks: list[Task] = []
    seen: set[str] = set()
    for difficulty, make in ((1, _d1), (2, _d2), (3, _d3)):
        made = 0
        while made < PER_LEVEL:
            text, schema, expected = make(r)
            if text in seen:
                continue
            seen.add(text)
            tasks.append(
                Task(
                    id=f"json/d{difficulty}/{made}",
                    domain="json",
                    prompt=text + _SUFFIX,
                    tests={"format": "json", "schema": schema, "expected": expected},
                    difficulty=difficulty,
                )
            )
            made += 1
    return tasks


def main() -> None:
    print(f"wrote {write_tasks(build_tasks(), DATA)} tasks to {DATA}")


if __name__ == "__main__":
    main()
