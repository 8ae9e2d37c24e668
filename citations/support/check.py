"""The support check: does the cited chunk back the sentence that cites it? (docs/support-check.md)"""

import functools
import json
import math
import re
import unicodedata
from bisect import bisect_left

from citations.phrases import normal_text

# Does the cited chunk back the sentence that cites it? A lexical proxy that needs no model and no tokenizer:
# the share of the sentence's content found in the chunk, and the cues below (docs/support-check.md).

SUPPORT_THRESHOLD = 0.25  # chosen on the development splits (docs/support-check.md; `make bench` prints the figures)
# Chinese sentences score lower than English ones for the same support (characters and bigrams against word stems),
# so the same rule gives them their own threshold, 0.20; a Chinese sentence's score is raised to ZH_SCALE, which
# puts it on the English scale: a raw 0.20 becomes 0.25, 0 stays 0 and 1 stays 1 (`judge`, `is_chinese`).
SUPPORT_THRESHOLD_ZH = 0.20
ZH_SCALE = math.log(SUPPORT_THRESHOLD) / math.log(SUPPORT_THRESHOLD_ZH)
CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
# Patterns applied to every sentence start with a character or a set of characters where they can: Python's regex
# engine then skips ahead to where a match may start instead of trying every position (several times faster).
THOUSANDS = re.compile(r",(?<=\d,)(?=\d{3}(?!\d))")  # a comma between digits, three follow: 1,000
STOP_CHARS = frozenset("的了是在和与及或等也都就而且这那个之其把被为对从到以于将并要会着过您你我他她它们吗呢吧啊请")
STOP_CHAR = re.compile("[" + "".join(sorted(STOP_CHARS)) + "]")
CJK_RUNS = re.compile(f"[{CJK}][{CJK}]*")  # [X][X]* is [X]+ written to start with a set (see THOUSANDS)
CODE_TOKENS = re.compile(r"\b(?:[A-Za-z]+\d[A-Za-z0-9]*|\d+[A-Za-z][A-Za-z0-9]*)")
CODE_HINT = re.compile(r"\d(?:(?<=[A-Za-z]\d)|(?=[A-Za-z]))")  # a digit beside a letter: a code's sign, found fast
NUMBER_TOKENS = re.compile(r"\d\d*(?:\.\d+)?")  # digits, with a decimal part
DIGIT = re.compile(r"\d")
WORD_TOKENS = re.compile("[A-Za-z\u00c0-\u024f][A-Za-z\u00c0-\u024f]*")  # a run of Latin letters
STOP_WORDS = frozenset(
    "a an the and or of to in on at for by with from is are was were be been being it its this that these those as if "
    "then than so do does did can could will would should may might must shall has have had there their they them "
    "you your we our he she his her which who whom what when where how also all any each such into about up out "
    "more most other some very just but i me my".split())
# The weights and factors below (WEIGHT_*, MISSING_*, PART_WEIGHT, CUE_FACTOR) were chosen on the development
# splits by bench/tune_support.py and rounded (docs/support-check.md).
WEIGHT_EXACT = 3.2  # a number or a code (B2, GB50016): the facts a wrong citation most often gets wrong
WEIGHT_NAME = 5.0  # a capitalised word inside a sentence
WEIGHT_CHAR = 1.0  # one Chinese character (as much as a bigram; a bigram with a stop character weighs 0.5)
WEIGHT_GENERIC = 0.1  # a word of GENERIC_WORDS: it says little about which fact a sentence states
# English words common in any factual sentence (time, sequence, framing): they weigh WEIGHT_GENERIC, by stem
GENERIC_WORDS = ("during again later year years since time times same while through including include included "
                 "called between early new once due prior based several many known well often first last "
                 "began become became following later currently current number part way made make another "
                 "both per around").split()
# Chinese words as general (a person, a thing, now, already, some): their bigram weighs WEIGHT_GENERIC
GENERIC_ZH = frozenset("有人 某人 人们 一些 一个 这个 那个 东西 事情 什么 可能 已经 现在 曾经 目前 非常 一定 其中 之一 "
                       "方面 时候 地方 情况 问题 进行 表示 认为 觉得 说话 话人 话者 讲话 自己 一种 一下 很多 比较 存在 需要 "
                       "知道 件事 这件 有一 了一 之前 个人".split())
WEIGHT_SHORT = 0.6  # an English word of four letters or fewer (not a name)
WEIGHT_QUESTION = 0.3  # factor for what the question itself says (repeating it proves nothing)
MISSING_EXACT = 0.33  # factor per number or code of the sentence that the chunk does not contain
MIN_FACTUAL_WEIGHT = 3.0  # less content than this is never judged "factual" (greetings, "如下：")
MAX_BACKING_WORK = 2_000_000  # unit look-ups for "does some chunk back this uncited sentence?" in one answer
MAX_PASSAGE_WORK = 20_000_000  # characters the cues' passage searches may read in one answer; then no more cues

# a run of 。！？!?；;, or a full stop before a space, the end or a Chinese character, or a run of … before a space or
# the end; with the closing quotes or brackets after it
SENTENCE_END = re.compile(rf"[。！？!?；;.…](?:(?<=[。！？!?；;])[。！？!?；;]*|(?<=\.)(?=\s|$|[{CJK}])|(?<=…)…*(?=\s|$))"
                          rf"[”’\"'）)】」』]*")
LINE_MARK = re.compile(r"[ \t]*(?:(?:[-*+]|\d{1,9}[.)、]|#{1,6}|>)[ \t]+)*")
INLINE_CODE = re.compile(r"`[^`\n]*`?")
TABLE_RULE = re.compile(r"[ \t]*\|?[ \t:|-]*-[ \t:|-]*")
MAX_SENTENCE_SHOWN = 300


EN_NUMBERS = {word: n for n, word in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen".split())}
EN_NUMBERS.update({word: 10 * n for n, word in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split(), 2)})
ORDINAL = re.compile(r"(?<=\d)(?:st|nd|rd|th|d)$", re.IGNORECASE)
ZH_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
# a run of Chinese numerals before a measure word (三十个, 两天)
ZH_NUMBER = re.compile("[零一二两三四五六七八九十百千][零一二两三四五六七八九十百千]*(?=[个天次楼层人元分年月日点号周岁小倍位条])")


def zh_number(text):
    """A Chinese numeral (below 10,000, made of ZH_DIGITS and 十百千) as an int."""
    total = digit = 0
    for char in text:
        if char in ZH_DIGITS:
            digit = ZH_DIGITS[char]
        else:
            unit = {"十": 10, "百": 100, "千": 1000}[char]
            total += (digit or 1) * unit
            digit = 0
    return total + digit


def number_words(words, exact):
    """`words` without the number words, which go into `exact` as numbers ("twenty five" -> #25)."""
    kept = []
    skip = False
    for position, word in enumerate(words):
        if skip:
            skip = False
            continue
        value = EN_NUMBERS.get(word.casefold())
        if value is None:
            kept.append(word)
            continue
        if value >= 20 and position + 1 < len(words) and 0 < EN_NUMBERS.get(words[position + 1].casefold(), 10) < 10:
            value += EN_NUMBERS[words[position + 1].casefold()]
            skip = True
        exact.add(f"#{value}")
    return kept


WORD_UNITS = {}  # word -> its unit ("" for a stop word), a bounded cache
INFLECTIONS = ("ing", "ed", "es", "s")
VOWELS = frozenset("aeiou")


def stem(word):
    """A lower-case word without its inflection, folded, in its first five letters: -ing, -ed, -es or -s comes off
    when three letters stay (not the -s of -ss), then a doubled final consonant (`banned`), a final e (`write`) or
    y (`study` -> `studi`): `opens`, `opened`, `opening` are all `open`; `writes`, `writing` both `writ`."""
    if len(word) > 3:
        for ending in INFLECTIONS:
            if word.endswith(ending) and len(word) - len(ending) >= 3 and not (ending == "s" and word.endswith("ss")):
                word = word[:-len(ending)]
                if ending in ("ing", "ed") and word[-1] == word[-2] and word[-1] not in VOWELS and word[-1] not in "ls":
                    word = word[:-1]
                break
        if len(word) > 3 and word[-1] == "e":
            word = word[:-1]
        elif len(word) > 3 and word[-1] == "y":
            word = word[:-1] + "i"
    return word[:5]


GENERIC_UNITS = frozenset(map(stem, GENERIC_WORDS))


def word_unit(word):
    """A lower-case word's unit: its `stem`; "" for a stop word."""
    unit = WORD_UNITS.get(word)
    if unit is None:
        unit = "" if word in STOP_WORDS or len(word) < 2 else stem(word)
        if len(WORD_UNITS) < 20_000:
            WORD_UNITS[word] = unit
    return unit


@functools.lru_cache(maxsize=20_000)
def word_weights(word):
    """(unit, weight inside a sentence, weight as a sentence's first word) of a word as written: WEIGHT_GENERIC for
    a generic word, WEIGHT_NAME for a capitalised word inside a sentence, 1.0 for a longer word, else WEIGHT_SHORT."""
    unit = word_unit(word.casefold())
    first = WEIGHT_GENERIC if unit in GENERIC_UNITS else 1.0 if len(word) > 4 else WEIGHT_SHORT
    inside = WEIGHT_NAME if word[0].isupper() and unit not in GENERIC_UNITS else first
    return unit, inside, first


def number_unit(number):
    """`#` and the number without leading or trailing zeros (`08` -> `#8`, `3.50` -> `#3.5`)."""
    whole, _, fraction = number.partition(".")
    fraction = fraction.rstrip("0")
    return "#" + (whole.lstrip("0") or "0") + ("." + fraction if fraction else "")


# the characters of Chinese text that NFKC changes most often: full-width punctuation, the ideographic space, "…"
COMMON_COMPATIBILITY = tuple((char, unicodedata.normalize("NFKC", char)) for char in "，：；！？（）％～\u3000…")


def nfkc(text):
    """unicodedata.normalize("NFKC", text), without its slow pass in the common case: once COMMON_COMPATIBILITY's
    characters are replaced by their normal forms, text that NFKC leaves as it is is the result."""
    if text.isascii():
        return text
    quick = text
    for char, normal in COMMON_COMPATIBILITY:
        if char in quick:
            quick = quick.replace(char, normal)
    return quick if unicodedata.is_normalized("NFKC", quick) else unicodedata.normalize("NFKC", text)


def content_units(text, question=None, weights=True, normalized=False):
    """{unit: weight} of a text: the characters and character bigrams of Chinese runs, word stems, numbers and
    codes (`#…`; number words and Chinese numerals before a measure word count as numbers). With weights=False,
    just the set of units (a chunk's side). `normalized`: the text is in `normal_form` already (as the sentences and
    chunks are; a question is put in it here, to be read the same way)."""
    if not normalized:
        text = normal_form(text)
    if "," in text:
        text = THOUSANDS.sub("", text)
    ascii_only = text.isascii()  # no Chinese numeral, run or stop character to look for (str.isascii costs nothing)
    if not ascii_only:
        text = ZH_NUMBER.sub(lambda m: str(zh_number(m.group())), text)
    exact = set()
    if DIGIT.search(text):  # numbers and codes (a code holds a digit)
        codes = CODE_TOKENS.findall(text) if CODE_HINT.search(text) else None
        if codes:
            text = CODE_TOKENS.sub(" ", text)
            exact.update(number_unit(ORDINAL.sub("", code)) if ORDINAL.search(code) and ORDINAL.sub("", code).isdigit()
                         else "#" + code.casefold() for code in codes)
        exact.update({"#" + number if number[0] != "0" and "." not in number else number_unit(number)
                      for number in set(NUMBER_TOKENS.findall(text))})
    words = WORD_TOKENS.findall(text)
    if words and not EN_NUMBERS.keys().isdisjoint(map(str.casefold, words)):
        words = number_words(words, exact)
    runs = [] if ascii_only else CJK_RUNS.findall(text)
    grams = {run[i:i + 2] for run in runs for i in range(len(run) - 1)}
    if not weights:
        units = grams | exact
        units.update(*runs)
        units.update(map(word_unit, {word.casefold() for word in set(words)}))
        units.discard("")
        return units
    units = dict.fromkeys(grams, 1.0)
    if runs:
        units.update(dict.fromkeys(set("".join(runs)) - STOP_CHARS, WEIGHT_CHAR))
    if runs and STOP_CHAR.search(text):  # a bigram with one stop character weighs 0.5, with two nothing
        for gram in [gram for gram in grams if gram[0] in STOP_CHARS or gram[1] in STOP_CHARS]:
            if gram[0] in STOP_CHARS and gram[1] in STOP_CHARS:
                del units[gram]
            else:
                units[gram] = 0.5
    if runs:
        for gram in GENERIC_ZH.intersection(grams):
            units[gram] = WEIGHT_GENERIC
    for position, word in enumerate(words):
        unit, inside, first = word_weights(word)
        if unit:
            weight = inside if position else first
            if units.get(unit, 0.0) < weight:
                units[unit] = weight
    units.update(dict.fromkeys(exact, WEIGHT_EXACT))
    if weights and question:
        for unit in units.keys() & question:
            units[unit] *= WEIGHT_QUESTION
    return units


def support_score(units, chunk, others=None):
    """The weighted share of a sentence's units found in `chunk` (a set of units), leaving out the units only
    another cited chunk contains (`others`: unit -> how many of the sentence's cited chunks contain it); times
    MISSING_EXACT for each number or code the chunk lacks. 1.0 when the sentence has no content to back. (The plain
    share; the check itself scores a pair with `judge`.)"""
    return plain_share(coverage(units, chunk, others))


def plain_share(covered):
    """`support_score` from a `coverage` result (found, needed, missing, words missing)."""
    found, needed, missing, _ = covered
    return 1.0 if needed == 0 else found / needed * MISSING_EXACT ** missing


# --- Partial support, contradiction cues, paraphrase tolerance (issue 24) -------------------------------
# Each cue is one table and one rule below; `judge` combines them into a score and the reasons a citation is weak.
# The tables are small and hand-made (standard library only): they catch the common cases, not meaning in general.

MISSING_DECAY = 0.86  # factor per word of the sentence that the chunk lacks ("the more is missing, the lower")
WEIGHT_ZH_WORD = 6.0  # the weight a two-character Chinese word's units add up to (see `coverage`)
PART_WEIGHT = 0.8  # how much the weakest part of a multi-part sentence counts against the whole sentence's score
MIN_PART_WEIGHT = 3.0  # a part with less content than this is not judged on its own
CUE_FACTOR = {"negation": 0.05, "antonym": 0.2, "number": 0.4, "roles": 0.2, "scope": 0.5}  # a cue's factor
MAX_MISSING_SHOWN = 5
PASSAGE_MATCH = 0.25  # a cue counts only where the chunk's matching passage holds this share of the sentence

# Parts of a sentence (rule: `sentence_parts`): clauses split at these separators.
# ，；：; , or : not between digits, and|but|…|where between spaces, 但是 但 并且 而且 同时
PART_SPLIT = re.compile(r"[，；：;,:\s但并而同](?:(?<=[，；：;])|(?<=[,:])(?<!\d[,:])(?!\d)"
                        r"|(?<=\s)(?:and|but|while|whereas|although|though|which|who|whose|where)\s"
                        r"|(?<=但)是|(?<=但)|(?<=并)且|(?<=而)且|(?<=同)时)")

# Negation (rule: `negated`): a negation word or character, minus the words that hold one without negating.
NEGATION_CHARS = re.compile("[不没无非未别勿莫]")
NEGATED_ZH = re.compile("[不没无非未别勿莫](?:(?<=没)有)?")  # 没有, or one negation character
NEGATED_EN = re.compile(r"\b(?:not|no|never|none|nobody|nothing|neither|nor|without|cannot|[a-z]+n[’']t)\b"
                        r"(?!-|\.? ?\d)")  # not "No. 12", "not-for-profit"
NEGATION_HINT_EN = re.compile(r"n(?:o|e[vi]|[’']t)|without")  # what every NEGATED_EN match holds, found fast
NEGATION_SKIP = frozenset("need needs want wants to be any only just even".split())  # after a negation: skip these
NEGATED_AROUND_EN = re.compile(r"\b([a-z]+) (not|never|no) ([a-z]{3,})\b")
NOT_NEGATIONS = re.compile("不仅|不但|不断|不少|不久|不过|不管|不论|不错|不同|无论|非常|除非|未来|别人|特别|区别|分别|级别|"
                           "类别|告别|无数|莫名|没错|并非常|无比|无限|不止|未免|不收费|不收钱|不要钱")

# Scope (rule: `scope_cue`): a word widening or narrowing a claim (all, only, never) that the chunk does not use.
SCOPE_ZH = ("所有", "全部", "任何", "从来", "从不", "一直", "只有", "只能", "永远", "绝对", "完全", "一切", "每", "只", "都")
SCOPE_EN = frozenset("all every only always entire whole solely exclusively everyone everything".split())

# Antonyms (rule: `antonym_cue`): a word in the sentence whose opposite stands in the chunk's matching passage.
ANTONYMS_ZH = (
    ("首", "末"), ("高", "低"), ("增加", "减少"), ("增长", "下降"), ("上升", "下降"), ("上涨", "下跌"), ("提高", "降低"),
    ("允许", "禁止"), ("可以", "禁止"), ("开始", "结束"), ("最早", "最晚"), ("提前", "推迟"), ("延长", "缩短"),
    ("延长", "压缩"), ("扩大", "缩小"), ("多于", "少于"), ("大于", "小于"), ("以上", "以下"), ("之前", "之后"),
    ("以前", "以后"), ("早于", "晚于"), ("支持", "反对"), ("稳定", "波动"), ("继续", "终止"), ("继续", "停止"),
    ("成功", "失败"), ("胜", "负"), ("赢", "输"), ("干净", "脏"), ("全部", "部分"), ("全部", "一半"), ("正面", "负面"),
    ("肯定", "否定"), ("加强", "削弱"), ("免费", "收费"), ("开放", "关闭"), ("打开", "关闭"), ("同意", "拒绝"),
    ("接受", "拒绝"), ("相同", "不同"), ("真", "假"), ("男", "女"), ("冷", "热"), ("快", "慢"), ("长", "短"),
    ("新", "旧"), ("年轻", "年老"), ("上午", "下午"), ("白天", "夜间"), ("白天", "晚上"), ("容易", "困难"),
    ("简单", "复杂"), ("喜欢", "讨厌"), ("安全", "危险"), ("进口", "出口"), ("买", "卖"), ("出生", "去世"),
    ("最多", "最少"), ("最大", "最小"), ("最高", "最低"), ("必须", "无需"), ("必须", "不必"), ("好", "坏"),
    ("富", "穷"), ("东", "西"), ("南", "北"), ("上", "下"), ("多", "少"), ("大", "小"), ("增", "减"), ("升", "降"),
    ("年初", "年末"), ("年初", "年底"), ("月初", "月底"), ("弱化", "加强"), ("削弱", "增强"), ("阻碍", "促进"),
    ("阻碍", "推进"), ("失衡", "平衡"), ("违反", "遵守"), ("落后", "先进"), ("古代", "现代"), ("增多", "减少"),
    ("扩大", "缩减"), ("远", "近"), ("胖", "瘦"), ("深", "浅"), ("贵", "便宜"), ("宽", "窄"), ("强", "弱"),
    ("早", "晚"), ("内", "外"), ("进口", "出口"), ("入", "出"), ("死", "活"), ("紧张", "放松"), ("积极", "消极"),
    ("乐观", "悲观"), ("主动", "被动"), ("合法", "非法"), ("公开", "秘密"), ("正确", "错误"), ("优点", "缺点"),
    ("提高", "打击"), ("保持", "改变"), ("独立", "依赖"), ("盈利", "亏损"), ("顺利", "困难"), ("热闹", "冷清"),
)
ANTONYMS_EN = (
    ("before", "after"), ("more", "less"), ("more", "fewer"), ("increase", "decrease"), ("increase", "reduce"),
    ("rise", "fall"), ("rose", "fell"), ("high", "low"), ("higher", "lower"), ("highest", "lowest"), ("first", "last"),
    ("earliest", "latest"), ("earlier", "later"), ("allow", "forbid"), ("allow", "prohibit"), ("permit", "prohibit"),
    ("win", "lose"), ("won", "lost"), ("winner", "loser"), ("open", "closed"), ("opened", "closed"),
    ("north", "south"), ("east", "west"), ("male", "female"), ("maximum", "minimum"), ("above", "below"),
    ("success", "failure"), ("accept", "reject"), ("include", "exclude"), ("older", "younger"), ("oldest", "youngest"),
    ("largest", "smallest"), ("longest", "shortest"), ("larger", "smaller"), ("longer", "shorter"), ("most", "least"),
    ("born", "died"), ("start", "end"), ("begin", "end"), ("join", "leave"), ("joined", "left"), ("buy", "sell"),
    ("bought", "sold"), ("import", "export"), ("entrance", "exit"), ("always", "never"), ("all", "none"),
    ("true", "false"), ("full", "empty"), ("same", "different"), ("support", "oppose"), ("gain", "loss"),
    ("public", "private"), ("upper", "lower"), ("inside", "outside"), ("success", "fail"), ("positive", "negative"),
)

# Paraphrase tolerance (rule: `expand_chunk`): a chunk holding one word of a group also counts as holding the others.
SYNONYMS_ZH = (
    ("害怕", "生畏", "畏惧", "恐惧", "惧怕", "怕"), ("有点", "有些", "稍微", "略微", "一点"), ("开始", "起始", "启动"),
    ("结束", "完成", "终了"), ("购买", "买", "采购"), ("出售", "卖", "销售"), ("帮助", "协助", "帮忙"),
    ("立即", "马上", "立刻"), ("需要", "须", "必须", "应", "应当", "要"), ("可以", "能", "能够", "可"),
    ("提前", "预先", "事先"), ("通知", "告知", "告诉"), ("时间", "时候", "时段"), ("每天", "每日", "天天"),
    ("电话", "致电", "拨打"), ("费用", "收费", "价格", "花费", "钱"), ("免费", "不收费", "不要钱", "不收钱"),
    ("公司", "企业", "单位"), ("孩子", "小孩", "儿童", "子女"), ("父亲", "爸爸"), ("母亲", "妈妈"),
    ("丈夫", "老公"), ("妻子", "老婆", "太太"), ("房子", "住房", "房屋"), ("工作", "上班", "职业"),
    ("高兴", "开心", "快乐", "愉快"), ("难过", "伤心", "悲伤", "痛苦"), ("生气", "愤怒", "发火"),
    ("漂亮", "美丽", "好看"), ("很多", "许多", "大量", "不少"), ("增加", "增长", "提高", "上升"),
    ("减少", "降低", "下降"), ("发展", "进步"), ("国家", "政府"), ("晚上", "夜间", "夜里"), ("早上", "早晨", "上午"),
    ("如果", "假如", "要是"), ("现在", "目前", "当前", "如今"), ("以前", "过去", "从前"), ("感到", "觉得", "感觉"),
    ("知道", "了解", "明白", "清楚"), ("认为", "以为", "觉得"), ("喜欢", "喜爱", "爱"), ("重要", "关键"),
)
SYNONYMS_EN = (
    ("start", "begin", "began", "begun", "commence", "launch"), ("end", "finish", "conclude", "complete"),
    ("buy", "bought", "purchase"), ("sell", "sold"), ("big", "large", "huge"), ("small", "little", "tiny"),
    ("help", "assist", "aid"), ("show", "display", "exhibit"), ("die", "died", "death", "dead"),
    ("born", "birth"), ("film", "movie"), ("win", "won", "victory", "defeat", "beat"), ("lose", "lost", "loss"),
    ("lead", "led"), ("write", "wrote", "written", "author"), ("take", "took", "taken"), ("give", "gave", "given"),
    ("become", "became"), ("grow", "grew", "grown"), ("know", "knew", "known"), ("leave", "left"),
    ("hold", "held"), ("meet", "met"), ("teach", "taught"), ("find", "found"), ("run", "ran"), ("come", "came"),
    ("go", "went", "gone"), ("see", "saw", "seen"), ("speak", "spoke", "spoken"), ("choose", "chose", "chosen"),
    ("fall", "fell"), ("rise", "rose", "risen"), ("build", "built"), ("pay", "paid"), ("tell", "told"),
    ("make", "made"), ("say", "said"), ("bring", "brought"), ("spend", "spent"), ("send", "sent"),
    ("fight", "fought"), ("keep", "kept"), ("draw", "drew", "drawn"), ("sing", "sang", "sung"), ("get", "got"),
    ("receive", "get", "obtain", "earn"), ("award", "prize", "honour", "honor"), ("city", "town"),
    ("company", "firm", "business"), ("use", "utilize", "employ"), ("famous", "renowned", "noted"),
    ("job", "work", "position", "role"), ("song", "single", "track"), ("album", "record"),
    ("appoint", "name", "named"), ("american", "us", "usa"), ("british", "uk", "england", "english"),
    ("jan", "january"), ("feb", "february"), ("mar", "march"), ("apr", "april"), ("aug", "august"),
    ("sep", "sept", "september"), ("oct", "october"), ("nov", "november"), ("dec", "december"),
    ("about", "approximately", "around", "roughly"), ("need", "require", "must"), ("allow", "permit", "let"),
    ("tell", "inform", "notify"), ("fee", "cost", "price", "charge"), ("free", "complimentary"),
)

# Unit conversions (rule: `converted_numbers`): a quantity in the chunk also counts in the other units of its kind.
UNIT_SCALE = {
    "mm": ("m", 0.001), "毫米": ("m", 0.001), "cm": ("m", 0.01), "厘米": ("m", 0.01), "m": ("m", 1.0),
    "米": ("m", 1.0), "km": ("m", 1000.0), "公里": ("m", 1000.0), "千米": ("m", 1000.0),
    "inch": ("m", 0.0254), "inches": ("m", 0.0254), "in": ("m", 0.0254), "ft": ("m", 0.3048), "feet": ("m", 0.3048),
    "foot": ("m", 0.3048), "mile": ("m", 1609.344), "miles": ("m", 1609.344),
    "g": ("kg", 0.001), "克": ("kg", 0.001), "kg": ("kg", 1.0), "千克": ("kg", 1.0), "公斤": ("kg", 1.0),
    "斤": ("kg", 0.5), "t": ("kg", 1000.0), "吨": ("kg", 1000.0), "lb": ("kg", 0.45359237),
    "lbs": ("kg", 0.45359237), "pounds": ("kg", 0.45359237),
    "ml": ("l", 0.001), "毫升": ("l", 0.001), "l": ("l", 1.0), "升": ("l", 1.0),
    "分钟": ("s", 60.0), "minute": ("s", 60.0), "minutes": ("s", 60.0), "min": ("s", 60.0),
    "小时": ("s", 3600.0), "hour": ("s", 3600.0), "hours": ("s", 3600.0), "h": ("s", 3600.0),
    "天": ("s", 86400.0), "day": ("s", 86400.0), "days": ("s", 86400.0), "周": ("s", 604800.0),
    "星期": ("s", 604800.0), "week": ("s", 604800.0), "weeks": ("s", 604800.0),
}
UNIT_NAMES = {}
for _name, (_kind, _scale) in UNIT_SCALE.items():
    UNIT_NAMES.setdefault(_kind, []).append((_name, _scale))
# a number and the word or (at most two) characters right after it (its unit or thing), and the word right before it
NUMBER_AFTER = re.compile(rf"(\d\d*(?:\.\d+)?)\s*(%|[A-Za-z]+|[{CJK}]{{1,2}})?")
NUMBER_BEFORE = re.compile(r"([A-Za-z]+)\s+(\d+(?:\.\d+)?)")
CHUNK_SENTENCE = re.compile(r"(?:[^。！？!?；;\n.]|\.(?!\s))+(?:[。！？!?；;\n]+|\.\s+|\.?$)")


SYNONYM_GROUPS_EN = [frozenset(map(stem, group)) for group in SYNONYMS_EN]
ANTONYM_STEMS_EN = [(a, b, a, b) for a, b in ANTONYMS_EN]


@functools.lru_cache(maxsize=20_000)
def word_forms(word):
    """A casefolded word and its forms without an inflection (-s, -d, -ed, -es, -ing): `closed` holds `close`,
    `opened` holds `open`, `closing` holds `clos` and `close`."""
    if len(word) > 3:
        if word[-1] in "sd":
            return (word, word[:-1], word[:-2]) if len(word) > 4 and word[-2] == "e" else (word, word[:-1])
        if len(word) > 5 and word.endswith("ing"):
            return word, word[:-3], word[:-3] + "e"
    return (word,)


def words_of(text):
    """The casefolded words of a text and their `word_forms`: the antonym rule's view."""
    words = set(WORD_TOKENS.findall(text.casefold()))
    if words:
        words.update(*map(word_forms, words))
    return words


def said_at(text, word):
    """Where a casefolded text first says `word`: a Chinese word as written, an English one in any of its
    `word_forms`; len(text) when it does not."""
    if word.isascii():
        for match in WORD_TOKENS.finditer(text):
            if word in word_forms(match.group()):
                return match.start()
        return len(text)
    at = text.find(word)
    return at if at >= 0 else len(text)


def negated(text):
    """Does `text` (casefolded) hold a negation? (the negation rule; NOT_NEGATIONS words do not count)"""
    if NEGATION_CHARS.search(text) and NEGATION_CHARS.search(NOT_NEGATIONS.sub("", text)):
        return True
    return NEGATION_HINT_EN.search(text) is not None and NEGATED_EN.search(text) is not None


def unit_name(thing):
    """The unit in UNIT_SCALE a number's following word or characters name, else None."""
    if thing in UNIT_SCALE:
        return thing
    return thing[0] if thing and thing[0] in UNIT_SCALE and not thing.isascii() else None


def thing_key(thing):
    """What a number counts, for comparing numbers: a word's first five letters, a Chinese measure's character."""
    return thing[:5] if thing.isascii() else thing[0]


def converted_numbers(found):
    """The number units the quantities among `found` ((number, following word) pairs, casefolded) take in the other
    units of their kind (460 mm -> #46, #0.46)."""
    units = set()
    for number, thing in set(found):
        name = unit_name(thing)
        if name is None:
            continue
        kind, scale = UNIT_SCALE[name]
        value = float(number) * scale
        for other, other_scale in UNIT_NAMES[kind]:
            if other_scale == scale:  # the same unit (m, 米): the number itself
                continue
            converted = value / other_scale
            for digits in (0, 1, 2):
                rounded = round(converted, digits)
                if rounded and abs(rounded - converted) <= abs(converted) * 0.03:
                    units.add(number_unit(f"{rounded:.{digits}f}"))
                    break
    return units


def cjk_units(word):
    return set(word) | {word[i:i + 2] for i in range(len(word) - 1)}


SYNONYM_LONG_ZH = sorted({w for group in SYNONYMS_ZH for w in group if len(w) > 2})
SYNONYM_UNITS_ZH = {}  # word -> the units of its whole group
for _group in SYNONYMS_ZH:
    for _word in _group:
        SYNONYM_UNITS_ZH.setdefault(_word, set()).update(*map(cjk_units, _group))
SYNONYM_UNITS_EN = {}  # stem -> the stems of its whole group
for _group in SYNONYM_GROUPS_EN:
    for _stem in _group:
        SYNONYM_UNITS_EN.setdefault(_stem, set()).update(_group)


def expand_chunk(text, units):
    """`units` (a chunk's) plus the units of the synonyms of its words."""
    extra = set()
    if CJK_RUNS.search(text):
        for word in SYNONYM_UNITS_ZH.keys() & units:  # a one- or two-character word is one of the chunk's units
            extra.update(SYNONYM_UNITS_ZH[word])
        for word in SYNONYM_LONG_ZH:
            if word in text:
                extra.update(SYNONYM_UNITS_ZH[word])
    for stem in SYNONYM_UNITS_EN.keys() & units:
        extra.update(SYNONYM_UNITS_EN[stem])
    return units | extra


class ChunkView:
    """What the support check needs of one chunk: its units (with synonyms and conversions), its casefolded text
    and, on first use, its sentences (where a cue looks for the passage that matches the cited sentence)."""

    def __init__(self, content, budget=None):
        normal = normal_form(content)
        self.text = normal.casefold()
        self.units = expand_chunk(self.text, content_units(normal, weights=False, normalized=True))
        self._found = None
        self._converted = None
        self._quantities = None
        self._held = {}
        self._budget = budget  # [characters the passage searches of this answer may still read], shared by the chunks
        self._sentences = None
        self._negated = None
        self._words = None
        self._word_line = None
        self._numbers = None

    def sentences(self):
        if self._sentences is None:
            self._sentences = [m.group() for m in CHUNK_SENTENCE.finditer(self.text) if m.group().strip()]
        return self._sentences

    def negated(self):
        if self._negated is None:
            self._negated = negated(self.text)
        return self._negated

    def words(self):
        if self._words is None:
            self._words = words_of(self.text)
        return self._words

    def word_line(self):
        if self._word_line is None:
            self._word_line = word_line(self.text)
        return self._word_line

    def numbers(self):
        """{thing: {numbers}}: the numbers of the chunk by the word after them and the word before them."""
        if self._numbers is None:
            self._numbers = {}
            for number, thing in self.found():
                if thing:
                    self._numbers.setdefault(thing_key(thing), set()).add(number_unit(number))
            for thing, number in NUMBER_BEFORE.findall(self.text):
                self._numbers.setdefault("^" + thing[:5], set()).add(number_unit(number))
        return self._numbers

    def holds(self, word):
        """Does the chunk's text hold `word` (remembered per word)?"""
        held = self._held.get(word)
        if held is None:
            held = self._held[word] = word in self.text
        return held

    def found(self):
        """(number, the word or characters after it) pairs of the chunk."""
        if self._found is None:
            self._found = NUMBER_AFTER.findall(THOUSANDS.sub("", self.text)) if DIGIT.search(self.text) else []
        return self._found

    def quantities(self):
        """{number unit: {unit names}}: the chunk's numbers followed by a unit of UNIT_SCALE."""
        if self._quantities is None:
            self._quantities = {}
            for number, thing in self.found():
                name = unit_name(thing)
                if name is not None:
                    self._quantities.setdefault(number_unit(number), set()).add(name)
        return self._quantities

    def converted(self):
        """The number units of the chunk's quantities in the other units of their kind."""
        if self._converted is None:
            self._converted = converted_numbers(self.found())
        return self._converted

    def passage(self, units):
        """(the chunk sentence holding the most of `units`, a sentence's weighted units; the share it holds);
        ("", 0.0) once the answer's passage budget is spent (see MAX_PASSAGE_WORK)."""
        sentences = self.sentences()
        keys = [(unit[1:] if unit[0] == "#" else unit, weight) for unit, weight in units.items()]
        if self._budget is not None:
            self._budget[0] -= len(keys) * len(self.text)
            if self._budget[0] < 0:
                return "", 0.0
        total = sum(weight for _, weight in keys) or 1.0
        if len(sentences) <= 1:
            return self.text, sum(weight for key, weight in keys if key in self.text) / total
        held, best = max((sum(weight for key, weight in keys if key in s), s) for s in sentences)
        return best, held / total


# a year, a dash and two digits (2018–19: a season or a school year), not inside a longer run of numbers (2010-12-01)
YEAR_RANGE = re.compile(r"(?<![\d.,/–-])\b(1[5-9]|20)(\d\d)( ?[–-] ?)(\d\d)\b(?![–/.,-]\d)")


def full_year(match):
    """A YEAR_RANGE match with its second year written out when it is the year after the first (2018–19,
    1999–00), else as it is (2010-12 may be a month; 1987-89 stays as written)."""
    year = int(match.group(1) + match.group(2))
    if (year + 1) % 100 != int(match.group(4)):
        return match.group()
    return f"{year}{match.group(3)}{year + 1}"


def normal_form(text):
    """Text as the check reads it: NFKC, a shortened second year written out (2018–19 -> 2018–2019)."""
    text = nfkc(text)
    return YEAR_RANGE.sub(full_year, text) if "–" in text or "-" in text else text


def folded(text):
    """Text as the cue rules read it: `normal_form`, casefolded."""
    return normal_form(text).casefold()


def sentence_parts(text):
    """The clauses of a sentence (`folded`), when it has two or more; else []."""
    parts = [part for part in PART_SPLIT.split(text) if part.strip()]
    return parts if len(parts) >= 2 else []


def weakest_part(units, parts, chunk, others=None):
    """The lowest share of its content the chunk holds over the parts carrying at least MIN_PART_WEIGHT; a
    part's content is the sentence's units written in it. None when fewer than two parts carry that much."""
    shares = []
    keys = [(unit[1:] if unit[0] == "#" else unit, unit, weight) for unit, weight in units.items()]
    for part in parts:
        found = needed = 0.0
        for key, unit, weight in keys:
            if key in part:
                if unit in chunk:
                    found += weight
                elif others and others.get(unit):
                    continue
                needed += weight
        if needed >= MIN_PART_WEIGHT:
            shares.append(found / needed)
    return min(shares) if len(shares) >= 2 else None


def coverage(units, chunk, others=None, converted=()):
    """(found weight, needed weight, numbers and codes missing, words missing) of `units` in the set `chunk` (or,
    for a number, in `converted`); the units only another cited chunk contains (`others`) are left out. Words
    missing: about how many words of the sentence the chunk lacks, the weight of its missing units other than
    numbers and codes, a Chinese unit counted at 1/WEIGHT_ZH_WORD (a missing two-character word loses about that
    much weight: its bigram, its characters and the bigrams joining it to its neighbours)."""
    found = needed = words = 0.0
    missing = 0
    for unit, weight in units.items():
        if unit in chunk:
            found += weight
        elif others and others.get(unit):
            continue
        elif unit[0] == "#":
            if unit in converted:
                found += weight
            else:
                missing += 1
        else:
            words += weight / WEIGHT_ZH_WORD if "\u3400" <= unit[0] else weight
        needed += weight
    return found, needed, missing, words


def negation_word(text):
    """The first negation of `text` as written (`不`, `没有`, `not`, `didn't`), or None."""
    cleared = NOT_NEGATIONS.sub(lambda m: " " * len(m.group()), text)
    match = NEGATED_ZH.search(cleared) or NEGATED_EN.search(text)
    return match.group().strip() if match else None


NEGATION_BRIDGE = "是会能要可有被再也都还就"  # between a Chinese negation and what it negates (不会学习, 没有被…抓到)


def word_line(text):
    """The Latin words of a text, one space between each and around them: what `said_in` compares."""
    return f" {' '.join(WORD_TOKENS.findall(text))} "


def said_in(line, phrase):
    """Does a `word_line` say the words of `phrase` in a row, whatever stands between them (spacing, punctuation,
    either apostrophe: hasn't, hasn’t)?"""
    return word_line(phrase) in line


CLAUSE_END = re.compile(r"[,;:.!?，；：。！？]")


def negated_thing_cue(sentence_text, passage):
    """When both negate: the sentence negates X (不X, 没有X) and the passage states X without a negation just
    before it (没有握…手 against 也握了她的手): {"kind": "negation", "claim": "没有握"}; else None."""
    cleared = NOT_NEGATIONS.sub(lambda m: " " * len(m.group()), sentence_text)
    passage_cleared = NOT_NEGATIONS.sub(lambda m: " " * len(m.group()), passage)
    for match in NEGATED_ZH.finditer(cleared):
        at = match.end()
        while at < len(cleared) and cleared[at] in NEGATION_BRIDGE:
            at += 1
        for size in (2, 1):  # what it negates: two characters, else one that is no stop character (没有握…)
            thing = cleared[at:at + size]
            if len(thing) < size or not CJK_RUNS.fullmatch(thing) or (size == 1 and thing in STOP_CHARS):
                continue
            if thing in passage_cleared and not negated_somewhere(passage_cleared, thing):
                return {"kind": "negation", "claim": sentence_text[match.start():at + size]}
            if thing in passage_cleared:
                break
    return None


def negated_somewhere(text, word):
    """Does a negation stand just before some place `word` occurs in `text`?"""
    start = text.find(word)
    while start >= 0:
        if NEGATION_CHARS.search(text, max(0, start - 3), start):
            return True
        start = text.find(word, start + 1)
    return False


def negation_cue(sentence_text, view, passage, said=None):
    """{"kind": "negation", "claim": w} when the sentence negates (w) and the chunk's matching passage does not;
    {"kind": "negation", "source": "不X"} when the passage negates X (`不X`, `没有X`, `not X`), the sentence
    says X and negates nothing. (A negation only in the passage, without X in the sentence, is no cue: it is
    how paraphrases often read: 不好 / 差.)"""
    said = negated(sentence_text) if said is None else said
    if said:
        if negated(passage):
            return negated_thing_cue(sentence_text, passage)
        if NEGATION_CHARS.search(NOT_NEGATIONS.sub("", sentence_text)):
            return {"kind": "negation", "claim": negation_word(sentence_text)}
        # English: the negated word itself must stand in the passage ("do not need" against "need"); a negation
        # whose word the passage lacks is a paraphrase at least as often as a contradiction (WiCE dev); and where
        # the chunk says the same negated phrase elsewhere ("he hasn't done" in a quote), the negation is its own
        passage_units = None
        for match in NEGATED_EN.finditer(sentence_text):
            rest = []  # the negated word and the word after it: words starting within 40 characters
            for word in WORD_TOKENS.finditer(sentence_text, match.end()):
                if word.start() >= match.end() + 40 or len(rest) == 2:
                    break
                if word.group() not in STOP_WORDS and word.group() not in NEGATION_SKIP:
                    rest.append(word)
            if rest:
                if passage_units is None:
                    passage_units = set(map(word_unit, WORD_TOKENS.findall(passage)))
                negated_word = rest[0].group()
                end = rest[0].end()  # the phrase runs to the word after the negated one, within the clause
                if len(rest) == 2 and not CLAUSE_END.search(sentence_text, end, rest[1].start()):
                    end = rest[1].end()
                if (word_unit(negated_word) in passage_units
                        and not said_in(view.word_line(), sentence_text[match.start():end])):
                    return {"kind": "negation", "claim": f"{match.group()} {negated_word}"}
        return None
    if not view.negated():
        return None
    cleared = NOT_NEGATIONS.sub(lambda m: " " * len(m.group()), passage)
    for match in NEGATED_ZH.finditer(cleared):
        at = match.end()
        while at < len(cleared) and cleared[at] in NEGATION_BRIDGE + "得准":
            at += 1
        thing = cleared[at:at + 2]
        if (len(thing) == 2 and CJK_RUNS.fullmatch(thing) and thing in sentence_text
                and negated_before(cleared, thing)):
            return {"kind": "negation", "source": cleared[match.start():at + 2]}
    for match in NEGATED_AROUND_EN.finditer(passage):  # "pets are not allowed" against "pets are allowed"
        before, negation, after = match.groups()
        if re.search(rf"\b{re.escape(before)} {re.escape(after)}\b", sentence_text):
            return {"kind": "negation", "source": f"{negation} {after}"}
    return None


LATIN = re.compile("[a-z]")
# words holding a one-character antonym without its meaning (小时 is no 小): removed before that check
COMPOUNDS_ZH = re.compile("小时|大家|大约|大概|大多|多少|东西|上午|下午|以上|以下|上班|下班|不少|至少|出现|出来|入口|"
                          "出口|高兴|好像|新闻|早上|晚上|内容|以内|以外|另外|此外|长期|强调")
OPPOSITES_ZH = {}  # word -> its opposites
for _a, _b in ANTONYMS_ZH:
    OPPOSITES_ZH.setdefault(_a, []).append(_b)
    OPPOSITES_ZH.setdefault(_b, []).append(_a)
OPPOSITES_EN = {}  # stem -> [(opposite stem, word, opposite word)]
for _a, _b, _word_a, _word_b in ANTONYM_STEMS_EN:
    OPPOSITES_EN.setdefault(_a, []).append((_b, _word_a, _word_b))
    OPPOSITES_EN.setdefault(_b, []).append((_a, _word_b, _word_a))


def antonym_candidates(sentence_text, units, view, words=None):
    """[(word, opposite, shown, shown opposite)]: antonym-table words of the sentence (its `folded` text and units)
    whose opposite the chunk holds somewhere and the sentence does not (the cheap first step of the antonym rule),
    in the order the sentence says them. `words`: the sentence's `words_of`, when the caller has it."""
    found = []
    for word in OPPOSITES_ZH.keys() & units.keys():  # the Chinese table's words are one or two characters: units
        for other in OPPOSITES_ZH[word]:
            if other not in sentence_text and view.holds(other):
                found.append((word, other, word, other))
    if words is None and LATIN.search(sentence_text):
        words = words_of(sentence_text)
    if words:
        for stem in OPPOSITES_EN.keys() & words:
            for other, shown, shown_other in OPPOSITES_EN[stem]:
                if other not in words and other in view.words():
                    found.append((stem, other, shown, shown_other))
    if len(found) > 1:  # in the sentence's order, never the sets'
        found.sort(key=lambda candidate: (said_at(sentence_text, candidate[0]), candidate))
    return found


def scope_cue(sentence_text, view, words=None):
    """{"kind": "scope", "claim": w}: the sentence says all/only/always… (SCOPE_ZH, SCOPE_EN) and the chunk does not;
    the first such word of the sentence. `words`: the sentence's `words_of`, when the caller has it."""
    said = [] if sentence_text.isascii() else [(sentence_text.find(word), -len(word), word) for word in SCOPE_ZH
                                                if word in sentence_text and word not in view.text]
    if words is None and LATIN.search(sentence_text):
        words = words_of(sentence_text)
    if words and not SCOPE_EN.isdisjoint(words):  # `words` holds every word of the sentence (and more forms)
        for match in WORD_TOKENS.finditer(sentence_text):
            if match.group() in SCOPE_EN and match.group() not in view.words():
                said.append((match.start(), -len(match.group()), match.group()))
                break
    # the first, and of two starting there the longer (只能 before 只)
    return {"kind": "scope", "claim": min(said)[2]} if said else None


def antonym_cue(candidates, passage):
    """{"kind": "antonym", "claim": a, "source": b}: the sentence says a, the chunk's matching passage says its
    opposite b and not a."""
    passage_words = None
    for said, other, shown, shown_other in candidates:
        if said.isascii():
            passage_words = passage_words if passage_words is not None else words_of(passage)
            if other in passage_words and said not in passage_words:
                return {"kind": "antonym", "claim": shown, "source": shown_other}
        else:
            plain = COMPOUNDS_ZH.sub(" ", passage) if len(other) == 1 else passage
            if other in plain and said not in plain and not negated_somewhere(plain, other):
                return {"kind": "antonym", "claim": shown, "source": shown_other}
    return None


def negated_before(text, word):
    """Does a negation stand just before every place `word` occurs in `text` (不收费 is 免费)?"""
    start = text.find(word)
    if start < 0:
        return False
    while start >= 0:
        if not NEGATION_CHARS.search(text, max(0, start - 3), start):
            return False
        start = text.find(word, start + 1)
    return True


def plainest(numbers):
    """Of the chunk's number units for one thing, the one a reason shows: the shortest, then the lowest."""
    return min(numbers, key=lambda unit: (len(unit), float(unit[1:]), unit))


def number_cue(sentence_text, units, view):
    """{"kind": "number", "claim": n, "source": m}: a number of the sentence the chunk lacks, where the chunk has
    another number for the same thing (the same word right after it, or right before it)."""
    chunk_numbers = None
    for number, thing in NUMBER_AFTER.findall(sentence_text):
        unit = number_unit(number)
        if unit in view.units or not thing:
            continue
        chunk_numbers = chunk_numbers if chunk_numbers is not None else view.numbers()
        other = chunk_numbers.get(thing_key(thing))
        if other:
            return {"kind": "number", "claim": number, "source": plainest(other)[1:]}
    for thing, number in NUMBER_BEFORE.findall(sentence_text):
        unit = number_unit(number)
        if unit in view.units:
            continue
        chunk_numbers = chunk_numbers if chunk_numbers is not None else view.numbers()
        other = chunk_numbers.get("^" + thing[:5])
        if other:
            return {"kind": "number", "claim": number, "source": plainest(other)[1:]}
    return None


# A date's month or a quantity's unit that differs for the same number (rule: `measure_cue`).
MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
MONTH_HINT = re.compile("|".join(MONTHS))
MONTH_NUMBER = re.compile(rf"\b({'|'.join(MONTHS)})[a-z]*\.? (\d{{1,4}})\b|\b(\d{{1,2}}) ({'|'.join(MONTHS)})[a-z]*\b")


# the units (see `content_units`) that let `measure_cue` find something: a unit's or a month's name
MEASURE_HINTS = frozenset(
    [word_unit(name) for name in UNIT_SCALE if name.isascii()]
    + [name if len(name) < 3 else name[:2] for name in UNIT_SCALE if not name.isascii()]
    + [word_unit(month) for month in ("january february march april may june july august september october "
                                      "november december jan feb mar apr jun jul aug sep sept oct nov dec").split()]) - {""}
# what `content_units` drops (a one-letter unit after a number, the stop word "may"): \d\s?(?:m|g|t|l|h|in)\b|\bmay\b
SHORT_MEASURE = re.compile(r"[\dm](?:(?<=\d)\s?(?:m|g|t|l|h|in)\b|(?<=\bm)ay\b)")


def month_numbers(text):
    """{(number, month): None} of the dates in a casefolded text (`march 1`, `1 march`, `march 2017`), in the
    text's order."""
    if not MONTH_HINT.search(text):  # MONTH_NUMBER needs one
        return {}
    return dict.fromkeys((number_unit(number or day), month or month_after)
                         for month, number, day, month_after in MONTH_NUMBER.findall(text))


def measure_cue(sentence_text, view):
    """{"kind": "number", "claim": "march 1", "source": "may 1"} when the chunk gives the sentence's number with
    another month, or {"claim": "5 km", "source": "5 miles"} with another unit of its kind (and never as the
    sentence writes it, nor as its conversion)."""
    if LATIN.search(sentence_text) and DIGIT.search(sentence_text):
        said = month_numbers(sentence_text)
        if said:
            chunk = month_numbers(view.text)
            for number, month in said:
                if (number, month) in chunk:
                    continue
                other = sorted(m for n, m in chunk if n == number and m != month)
                if other:
                    return {"kind": "number", "claim": f"{month} {number[1:]}", "source": f"{other[0]} {number[1:]}"}
    for number, thing in NUMBER_AFTER.findall(sentence_text):
        name = unit_name(thing) if thing else None
        if name is None:
            continue
        unit = number_unit(number)
        kind, scale = UNIT_SCALE[name]
        same = view.quantities().get(unit)
        if not same or any(UNIT_SCALE[other][1] == scale for other in same) or unit in view.converted():
            continue
        for other in sorted(same):
            if UNIT_SCALE[other][0] == kind:
                return {"kind": "number", "claim": f"{number} {name}", "source": f"{number} {other}"}
    return None


# Swapped roles (rule: `roles_cue`): "A 比 B", "A … -er than B", "A defeated B": the two sides, in the sentence and
# swapped in the passage.
ROLE_PATTERNS = (re.compile(rf"([{CJK}a-z0-9]{{2}})比([{CJK}a-z0-9]{{2}})"),
                 re.compile(r"([a-z0-9]+) (?:is |are |was |were )?[a-z]+er than ([a-z0-9]+)"),
                 re.compile(r"([a-z0-9]+) (?:defeated|beat|overtook|succeeded|replaced) ([a-z0-9]+)"))
ROLE_HINT = re.compile(r"比|than|defeated|beat|overtook|succeeded|replaced")


def roles_cue(sentence_text, passage):
    """{"kind": "roles", "claim": "A比B", "source": "B比A"}: the sentence's two sides swapped in the passage."""
    for pattern in ROLE_PATTERNS:
        claim = pattern.search(sentence_text)
        if not claim or claim.group(1) == claim.group(2):
            continue
        for source in pattern.finditer(passage):
            if (source.group(1), source.group(2)) == (claim.group(2), claim.group(1)):
                return {"kind": "roles", "claim": claim.group(), "source": source.group()}
    return None


def judge(text, units, view, others=None, parts=(), covered=None):
    """(score, reasons) for a sentence (its `folded` text, weighted units and parts) citing the chunk `view`.

    The score is the weighted share of the sentence's content the chunk holds, lower the more weight is missing
    (MISSING_DECAY per unit of weight, MISSING_EXACT per number or code), pulled toward its weakest clause
    (PART_WEIGHT), times CUE_FACTOR for each contradiction cue relative to the chunk's matching passage; for a
    Chinese sentence, raised to ZH_SCALE.
    `parts`: the sentence's `sentence_parts`, or None to split it here when the chunk lacks some of its content.
    `covered`: `coverage(units, view.units, others)` when the caller has it already."""
    found, needed, missing, lacking = covered or coverage(units, view.units, others)
    if needed == 0:
        return 1.0, []
    if missing and view.converted():
        found, needed, missing, lacking = coverage(units, view.units, others, view.converted())
    score = found / needed * MISSING_EXACT ** missing * MISSING_DECAY ** lacking
    if found < needed and parts is None:
        parts = sentence_parts(text)
    weakest = weakest_part(units, parts, view.units, others) if parts and found < needed else None
    if weakest is not None:
        score = min(score, (1 - PART_WEIGHT) * score + PART_WEIGHT * weakest)
    reasons = []
    cue = (number_cue(text, units, view) if missing else
           measure_cue(text, view) if (not MEASURE_HINTS.isdisjoint(units) or SHORT_MEASURE.search(text))
           and DIGIT.search(text) else None)
    if cue:
        reasons.append(cue)
    if found:
        words = words_of(text) if LATIN.search(text) else None
        cue = scope_cue(text, view, words)
        if cue:
            reasons.append(cue)
        passage = None
        candidates = antonym_candidates(text, units, view, words)
        roles = ROLE_HINT.search(text)
        said = negated(text)
        for rule in ("negation", "antonym", "roles"):
            if rule == "negation" and not (said or view.negated()):
                continue
            if (rule == "antonym" and (not candidates or said)) or (rule == "roles" and not roles):
                continue
            if passage is None:
                passage, share = view.passage(units)
            if share < PASSAGE_MATCH:
                break
            cue = (negation_cue(text, view, passage, said) if rule == "negation" else
                   antonym_cue(candidates, passage) if rule == "antonym" else roles_cue(text, passage))
            if cue:
                reasons.append(cue)
    for reason in reasons:
        score *= CUE_FACTOR[reason["kind"]]
    if 0.0 < score < 1.0 and is_chinese(units):
        score **= ZH_SCALE
    return score, reasons


def is_chinese(units):
    """Do Chinese characters and bigrams carry more than half of a sentence's weight? (`ZH_SCALE`)"""
    chinese = total = 0.0
    for unit, weight in units.items():
        total += weight
        if unit[0] >= "\u3400":
            chinese += weight
    return chinese * 2 > total


# a number as a reason shows it: with its unit (460 mm, 5%, 40人) when one follows, never a digit inside a code (B2)
NUMBER_SHOWN = re.compile(rf"(?<![A-Za-z\d.])(\d+(?:\.\d+)?)(?![A-Za-z]*\d)(?:\s?(%|[A-Za-z]+|[{CJK}]{{1,2}}))?")
MEASURE_WORDS = frozenset("个天次楼层人元分年月日点号周岁倍位条台辆张件")


def missing_items(sentence, view, others=None, limit=MAX_MISSING_SHOWN):
    """The sentence's numbers (with their unit), names, words and Chinese phrases the chunk lacks, as written."""
    text = THOUSANDS.sub("", normal_form(sentence))
    items = []

    def held(unit):
        return unit in view.units or bool(others and others.get(unit)) or (unit[0] == "#" and unit in view.converted())

    shown_units = {}  # where a shown number's unit starts -> its length
    for match in NUMBER_SHOWN.finditer(text):
        if held(number_unit(match.group(1))):
            continue
        after = match.group(2) or ""
        if after == "%" or after.casefold() in UNIT_SCALE:
            unit = after
        elif after and not after.isascii() and (after[0] in UNIT_SCALE or after[0] in MEASURE_WORDS):
            unit = after[0]
        else:
            unit = ""
        if unit:
            shown_units[match.start(2)] = len(unit)
            items.append((0, match.start(), text[match.start():match.start(2) + len(unit)]))
        else:
            items.append((0, match.start(), match.group(1)))
    for position, match in enumerate(WORD_TOKENS.finditer(text)):
        word = match.group()
        unit = word_unit(word.casefold())
        if match.start() and text[match.start() - 1].isdigit() or match.start() in shown_units:
            continue  # 9th, 80s, B2's letters, 460 mm's unit: part of a number, a code or a shown quantity
        if unit and not held(unit) and word.casefold() not in EN_NUMBERS:
            items.append((1 if position and word[0].isupper() else 2, match.start(), word))
    for run in CJK_RUNS.finditer(text):
        chars = run.group()
        covered = [False] * len(chars)
        for i in range(shown_units.get(run.start(), 0)):
            covered[i] = True  # 40人's 人, 2公里's 公里
        for i in range(len(chars) - 1):
            if held(chars[i:i + 2]):
                covered[i] = covered[i + 1] = True
        for i in range(len(chars) - 1, -1, -1):  # a stop character joins the missing phrase it starts (到达)
            char = chars[i]
            stop = char in STOP_CHARS and (i + 1 == len(chars) or covered[i + 1])
            covered[i] = covered[i] or stop or (len(chars) == 1 and held(char))
        i = 0
        while i < len(chars):
            if covered[i]:
                i += 1
                continue
            j = i
            while j < len(chars) and not covered[j]:
                j += 1
            items.append((2, run.start() + i, chars[i:j]))
            i = j
    shown = []
    for _, _, item in sorted(items):
        if item not in shown:
            shown.append(item)
    return shown[:limit]


def reason_text(reasons):
    """The reasons as one line: `missing: ["460 mm"]; negation; antonym: 首/末; number: 7 ≠ 12`."""
    parts = []
    for reason in reasons:
        kind = reason["kind"]
        if kind == "missing":
            parts.append("missing: " + json.dumps(reason["items"], ensure_ascii=False))
        elif kind == "negation":
            parts.append("negation")
        elif kind == "number":
            parts.append(f"number: {reason['claim']} ≠ {reason['source']}")
        elif kind == "scope":
            parts.append(f"scope: {reason['claim']}")
        else:
            parts.append(f"{kind}: {reason['claim']}/{reason['source']}")
    return "; ".join(parts)


# Sentence splitting (rule: `not_an_end`): a full stop that ends none of these ends no sentence.
ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof st jr sr co inc ltd corp bros vs etc eg ie no nos vol pp fig approx jan feb mar apr jun jul aug "
    "sep sept oct nov dec mt ft gen col lt sgt capt gov sen rep cf al ave rd blvd dept univ est ca ed eds rev hon "
    "op nr tel min max v c".split())
WORD_BEFORE_DOT = re.compile(r"[A-Za-z][A-Za-z.]*\Z")


def not_an_end(text, begin, dot):
    """Does the . ; ! or ? at `text[dot]` (in a sentence starting at `begin`) end nothing? When a lower-case word
    follows, inside brackets or quotes still open, and for a full stop of an abbreviation (`Co.`, `e.g.`, `U.S.`,
    `v.`) or an initial (`Mark T. Smith`)."""
    following = text[dot + 1:dot + 3].lstrip()
    if following[:1].islower() and following[:1].isascii():
        return True
    if text[dot] == ";" and following[:1].isascii():
        return True  # an English semicolon joins the clauses of one sentence
    if following and text.count("(", begin, dot) > text.count(")", begin, dot):
        return True
    if following and text.count('"', begin, dot) % 2:
        return True
    if text[dot] != ".":
        return False
    word = WORD_BEFORE_DOT.search(text, max(0, dot - 12), dot)
    if word is None:
        return False
    word = word.group()
    if word.replace(".", "").casefold() in ABBREVIATIONS:
        return True
    if len(word) == 1 and word.isupper():
        return bool(following)  # an initial, unless the text ends here
    parts = word.split(".")
    return len(parts) > 1 and all(0 < len(part) <= 2 for part in parts)


def sentence_spans(text):
    """[(start, end, kind)]: the sentences of `text` — split after 。！？；!?; and a full stop, one per list item,
    heading line or table row; fenced code blocks and table rules are not sentences and inline code is never split."""
    spans = []
    fence = False
    start = 0
    for line in text.split("\n"):
        at, start = start, start + len(line) + 1
        if line.startswith("```"):
            fence = not fence
            continue
        stripped = line.strip()
        if fence or not stripped:
            continue
        if stripped.startswith("|"):
            if not TABLE_RULE.fullmatch(line):
                spans.append((at, at + len(line), "row"))
            continue
        kind = "heading" if stripped.startswith("#") else "text"
        masked = INLINE_CODE.sub(lambda m: "x" * len(m.group()), line) if "`" in line else line
        begin = LINE_MARK.match(line).end()
        for end in SENTENCE_END.finditer(masked, begin):
            if end.group()[0] in ".;!?" and not_an_end(masked, begin, end.start()):
                continue
            if end.end() > begin:
                spans.append((at + begin, at + end.end(), kind))
                begin = end.end()
        if line[begin:].strip():
            spans.append((at + begin, at + len(line), kind))
    return spans


def sentence_of(spans, starts, text, position):
    """The index of the sentence a citation at `position` belongs to: the one it ends or stands in; between two
    sentences, the one before when no line break comes between, else the one after."""
    index = bisect_left(starts, position) - 1  # the last sentence starting before `position`
    if index >= 0 and position <= spans[index][1]:
        return index
    after = index + 1 if index + 1 < len(spans) else None
    if index >= 0 and (after is None or "\n" not in text[spans[index][1]:position]):
        return index
    return after


def check_support(pieces, chunks, threshold=SUPPORT_THRESHOLD, question="", phrases=()):
    """The support check over the answer without markers and its citation pieces (docs/support-check.md)."""
    text_parts, cites, length = [], [], 0
    for piece in pieces:
        if isinstance(piece, str):
            text_parts.append(piece)
            length += len(piece)
        else:
            cites.append((length, piece["ids"]))
    text = "".join(text_parts)
    spans = sentence_spans(text)
    starts = [start for start, _, _ in spans]
    cited = [[] for _ in spans]
    for position, ids in cites:
        index = sentence_of(spans, starts, text, position)
        if index is not None:
            cited[index].extend(i for i in ids if i not in cited[index])
    question_units = set(content_units(question, weights=False)) if question else None
    views = {}
    budget = [MAX_PASSAGE_WORK]

    def view_of(chunk_id):
        if chunk_id not in views:
            chunk = (chunks or {}).get(int(chunk_id))
            content = chunk.get("content") if isinstance(chunk, dict) else None
            usable = isinstance(content, str) and content.strip()
            views[chunk_id] = ChunkView(content, budget) if usable else None
        return views[chunk_id]

    backing = Backing(lambda: [view.units for view in map(view_of, map(str, chunks or {})) if view is not None])
    support = {}  # chunk id -> lowest score over the sentences citing it
    lowest = {}  # chunk id -> (sentence, cues, holders) of that lowest score
    pairs = good_pairs = claims = backed = 0
    uncited = []
    for (start, end, kind), ids in zip(spans, cited):
        sentence = text[start:end].strip()
        normal = normal_form(sentence)
        units = content_units(normal, question_units, normalized=True)
        if ids:
            said = normal.casefold()
            parts = None  # `judge` splits the sentence when it needs its parts
            known = [i for i in ids if view_of(i) is not None]
            if not known:
                continue
            claims += 1
            holders = {unit: sum(unit in views[i].units for i in known) for unit in units} if len(known) > 1 else None
            if holders is None:  # one chunk: its coverage is the plain share's and the start of `judge`'s score
                covered = coverage(units, views[known[0]].units)
                plain = plain_share(covered)
            else:
                covered = None
                plain = support_score(units, {unit for unit, n in holders.items() if n})
            if plain >= threshold:
                backed += 1
            for chunk_id in known:
                score, cues = judge(said, units, view_of(chunk_id), holders, parts, covered)
                if chunk_id not in support or score < support[chunk_id]:
                    support[chunk_id] = score
                    lowest[chunk_id] = (sentence, cues, holders)
                pairs += 1
                good_pairs += score >= threshold
            continue
        factual = is_factual(sentence, units, kind, phrases)
        if factual or (factual is False and backing.backs(units, threshold)):
            claims += 1
            uncited.append(sentence if len(sentence) <= MAX_SENTENCE_SHOWN else sentence[:MAX_SENTENCE_SHOWN - 1] + "…")
    reasons = {}
    for chunk_id, (sentence, cues, others) in lowest.items():
        found = list(cues)
        if support[chunk_id] < threshold:
            items = missing_items(sentence, view_of(chunk_id), others)
            if items:
                found.insert(0, {"kind": "missing", "items": items})
        reasons[chunk_id] = found
    return {
        "text": text,  # the answer without markers
        "support": support,
        "reasons": reasons,
        "uncited_sentences": uncited,
        "citation_recall_proxy": round(backed / claims, 3) if claims else None,
        "citation_precision_proxy": round(good_pairs / pairs, 3) if pairs else None,
    }


def is_factual(sentence, units, kind, phrases):
    """None when an uncited sentence cannot state a fact (a heading, a question, an introduction ending with a
    colon, a refusal, too little content), True when it holds a number or code, else False (then it states a fact
    when some chunk of this turn backs it: its content came from the sources, yet it cites nothing)."""
    if kind == "heading" or sentence.rstrip("*_ ").endswith(("?", "？", ":", "：")):
        return None
    if sum(units.values()) < MIN_FACTUAL_WEIGHT:
        return None
    said = normal_text(sentence)
    if any(phrase in said for phrase in phrases):
        return None
    return any(unit[0] == "#" for unit in units)


class Backing:
    """Does some chunk back a sentence? The chunks are tried in turn and the first that holds `threshold` of the
    sentence's weight answers yes; the work in one answer is bounded (MAX_BACKING_WORK unit look-ups), after which
    it answers no."""

    def __init__(self, chunk_units):
        self._chunk_units = chunk_units  # a callable giving the chunks' unit sets: called on first use
        self._chunks = None
        self._work = MAX_BACKING_WORK

    def backs(self, units, threshold):
        if units is None:  # not a candidate
            return False
        if self._chunks is None:
            self._chunks = [chunk for chunk in self._chunk_units() if chunk]
        needed = sum(units.values())
        if needed <= 0:
            return False
        enough = threshold * needed
        items = list(units.items())
        for chunk in self._chunks:
            self._work -= len(items)
            if self._work < 0:
                return False
            if sum(weight for unit, weight in items if unit in chunk) >= enough:
                return True
        return False
