"""One label-selector parser (kubectl's -l grammar, labels.Parse) and one matcher for every form."""

from __future__ import annotations

import pytest

from kubectl_kyrec.k8s.labels import SelectorError, from_label_selector, matches_selector, parse_selector

# valid selectors from apimachinery's labels/selector_test.go TestSelectorParse and the -l grammar
VALID = ["", "x=a,y=b,z=c", "x!=a,y=b", "x=", "x= ", "x=,z= ", "x= ,z= ", "!x", "x>1", "x>1,z<5", "x==a",
         "x in (a,b)", "x notin (a)", "x in (foo,,baz),y,z notin ()", "x in (a,)", "env in (prod, qa)",
         "example.com/tier=web", "in in (in)", "notin notin (notin)"]
INVALID = ["x=a||y=b", "x==a==b", "!x=a", "x<a", "x>", "x in (", "x in a", "a=b=c", "x=a,", ",x=a", "x=a b",
           "x in (a b)", "-x", "x=-a", "Example.com/x=a", "x=" + "a" * 64, "x notin", "=a"]


@pytest.mark.parametrize("text", VALID)
def test_valid_selectors_parse(text: str) -> None:
    parse_selector(text)


@pytest.mark.parametrize("text", INVALID)
def test_malformed_selectors_are_refused(text: str) -> None:
    with pytest.raises(SelectorError):
        parse_selector(text)


@pytest.mark.parametrize(("text", "labels", "expected"), [
    ("env in (prod,qa)", {"env": "qa"}, True),
    ("env in (prod,qa)", {"env": "dev"}, False),
    ("env in (prod,qa)", {}, False),
    ("env notin (prod,qa)", {}, True),
    ("env notin (prod,qa)", {"env": "prod"}, False),
    ("env!=prod", {}, True),
    ("env==prod", {"env": "prod"}, True),
    ("env=prod,tier", {"env": "prod"}, False),
    ("env=prod,tier", {"env": "prod", "tier": ""}, True),
    ("!tier", {"tier": "x"}, False),
    ("!tier", {}, True),
    ("x=", {"x": ""}, True),
    ("replicas>2", {"replicas": "3"}, True),
    ("replicas>2", {"replicas": "two"}, False),
    ("replicas<2", {"replicas": "1"}, True),
    ("", {"any": "thing"}, True),
])
def test_string_selector_matches_as_kubectl(text: str, labels: dict[str, str], expected: bool) -> None:
    assert parse_selector(text).matches(labels) is expected


def test_structured_and_string_forms_agree() -> None:
    structured = {"matchLabels": {"app": "web"},
                  "matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["prod"]}]}
    text = parse_selector("app=web,env notin (prod)")
    for labels in ({"app": "web"}, {"app": "web", "env": "prod"}, {"app": "db"}, {}):
        assert matches_selector(structured, labels) == text.matches(labels)


def test_structured_errors() -> None:
    with pytest.raises(SelectorError):
        from_label_selector({"matchExpressions": [{"key": "a", "operator": "In"}]})
    with pytest.raises(SelectorError):
        from_label_selector({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]})
    assert from_label_selector(None).empty and matches_selector({}, {"a": "b"})
