"""How the support check's numbers are chosen and held (bench/support.py, bench/tune_support.py): the labelled set,
the threshold rule, the weight search, and that the weights the search tries really reach the check."""

import pytest

from bench import support, tune_support
from citations.support.weights import DEFAULT_WEIGHTS, SHIPPED, Weights, as_dict

CHUNK = "The school opened in 2016 with 400 students."
# rows on which each weight the search moves changes some score: a number, a name, a short and a generic word the
# chunk lacks, Chinese characters, a two-part sentence, and each contradiction cue
ROWS = {
    "wice": [
        {"answer": "The school opened in 2016 [C:1].", "chunk": CHUNK, "supported": True},
        {"answer": "The school closed in 2019 [C:1].", "chunk": CHUNK, "supported": False},
        {"answer": "It has 400 students and a pool [C:1].", "chunk": CHUNK, "supported": False},
        {"answer": "The school in Paris opened again in 2016 with a pool [C:1].", "chunk": CHUNK, "supported": False},
        {"answer": "Only the school opened in 2016 [C:1].", "chunk": CHUNK, "supported": True},
        {
            "answer": "The permit must be renewed after the inspection [C:1].",
            "chunk": "The permit must be renewed before the inspection takes place.",
            "supported": False,
        },
    ],
    "ocnli": [
        {"answer": "学校2016年开学[C:1]。", "chunk": "学校于2016年开学。", "supported": True},
        {"answer": "学校没有开学[C:1]。", "chunk": "学校于2016年开学。", "supported": False},
        {
            "answer": "夜间巡更从22:00开始，访客须在前台登记身份证件[C:1]。",
            "chunk": "巡更管理规定：夜间巡更从22:00开始，每2小时巡查一次。",
            "supported": False,
        },
    ],
    "own": [
        {"sentence": "The school opened in 2016.", "chunk": CHUNK, "supported": True, "lang": "en"},
        {"sentence": "The school has 500 students.", "chunk": CHUNK, "supported": False, "lang": "en"},
    ],
}


def test_the_labelled_set_is_large_bilingual_and_holds_at_the_threshold():
    data = support.load()
    assert " ".join(data["construction"])  # the file documents how it was built
    pairs = support.labelled_pairs(data)
    assert len(pairs) >= 300
    for lang in ("zh", "en"):
        assert sum(p["lang"] == lang for p in pairs) >= 120
    kinds = {p["kind"] for p in pairs}
    assert {"paraphrase", "partial_quote", "numbers", "wrong_fact", "neighbour", "number_changed"} <= kinds
    assert any(p["supported"] for p in pairs) and any(not p["supported"] for p in pairs)
    scores = support.scored(pairs)  # the thresholds come from the development splits (bench.support.dev_thresholds)
    for lang in ("zh", "en"):  # a regression guard per language: `make bench` prints the measured values
        precision, recall, _ = support.weak_flag_quality(
            [score for score, p in zip(scores, pairs) if p["lang"] == lang], DEFAULT_WEIGHTS.threshold
        )
        assert precision >= 0.9 and recall >= 0.85, lang


def test_the_threshold_rule_picks_per_language_the_best_f05_where_every_target_holds():
    # English: 0.25 and 0.30 meet WiCE's and the own pairs' targets, 0.30 catches more at the same precision
    wice = [(0.27, False)] * 80 + [(0.1, False)] * 10 + [(0.9, True)] * 30 + [(0.28, True)] * 2
    own_en = [(0.1, False)] * 20 + [(0.9, True)] * 20
    # Chinese: from 0.25 up too many supported OCNLI pairs are flagged; 0.15 misses the own pairs' recall
    ocnli = [(0.1, False)] * 60 + [(0.18, False)] * 10 + [(0.22, True)] * 60 + [(0.9, True)] * 80
    own_zh = [(0.1, False)] * 15 + [(0.17, False)] * 5 + [(0.9, True)] * 20
    picked = support.dev_thresholds({"wice": wice, "own_en": own_en, "ocnli": ocnli, "own_zh": own_zh})
    assert picked == {"en": 0.3, "zh": 0.2}
    assert (
        support.dev_thresholds(
            {"wice": wice, "own_en": [(0.9, False)] * 5 + [(0.9, True)], "ocnli": ocnli, "own_zh": own_zh}
        )["en"]
        is None
    )  # no threshold meets the own pairs' recall


def test_the_thresholds_are_chosen_on_raw_chinese_scores():
    chunk = "巡更人员每2小时巡查一次，夜间由保安队长带班。"
    answer = "巡更人员每2小时巡查一次，访客须在前台登记身份证件[C:1]。"
    raw, shipped = (support.node_support(answer, chunk, weights) for weights in (support.RAW_WEIGHTS, DEFAULT_WEIGHTS))
    assert support.RAW_WEIGHTS.zh_scale == 1.0 and 0 < raw < shipped < 1


def test_the_auroc_spread_resamples_whole_groups():
    separated = [(0.9, True), (0.1, False)] * 20
    assert support.auroc_spread(separated, [str(i) for i in range(40)]) == 0.0  # every resample: AUROC 1
    mixed = [(0.6, True), (0.4, False), (0.3, True), (0.7, False), (0.8, True)] * 8
    spread = support.auroc_spread(mixed, [str(i) for i in range(40)])
    assert 0.02 < spread < 0.3 and spread == support.auroc_spread(mixed, [str(i) for i in range(40)])  # seeded
    # a group's rows are drawn together: with one group, every resample is the sample itself
    assert support.auroc_spread(mixed, ["one"] * 40) == 0.0


def test_the_weight_search_keeps_only_better_moves_within_range_and_leaves_the_shipped_weights():
    before = tune_support.current()
    rows = {"wice": ROWS["wice"][:3], "ocnli": ROWS["ocnli"][:2], "own": ROWS["own"]}
    kept = []
    best, figures = tune_support.climb(rows, 6, 1, report=kept.append)
    assert tune_support.current() == before and DEFAULT_WEIGHTS == Weights() and as_dict(DEFAULT_WEIGHTS) == SHIPPED
    assert all(
        low <= best[name] <= high for name, (low, high) in tune_support.SPACE.items() if best[name] != before[name]
    )
    assert kept[0].startswith("start") and len(figures) == 3
    start = (
        support.auroc(support.scored_rows(rows["wice"])),
        support.auroc(support.scored_rows(rows["ocnli"])),
        support.auroc(support.scored(rows["own"])),
    )
    assert tune_support.objective(figures) >= tune_support.objective(start)


@pytest.mark.parametrize("name", list(tune_support.SPACE))
def test_every_weight_the_search_moves_changes_the_scores_it_reads(name):
    # the shipped weights first, so that anything the check remembers of them is in place; then the weight at
    # either end of its range: a score the check computed with the shipped value would not move
    shipped = tune_support.scores(ROWS, {})
    low, high = tune_support.SPACE[name]
    for value in (low, high):
        if value != SHIPPED[name]:
            assert tune_support.scores(ROWS, {name: value}) != shipped, (name, value)
    assert tune_support.scores(ROWS, {}) == shipped  # and nothing is left behind


def test_a_changed_number_is_derived_only_from_numbers_the_chunk_holds():
    assert support.changed_number("费用为10元，共2次", "费用10元，3次") == "费用为11元，共2次"
    assert support.changed_number("费用为10元", "费用10元或11元") == "费用为12元"
    assert support.changed_number("无数字", "10元") is None
