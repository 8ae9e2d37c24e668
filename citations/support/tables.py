"""The support check's word tables, as data (docs/support-check.md). Small and hand-made: they catch the common
cases, not meaning in general. tests/citations/support/test_tables.py holds each table to what it promises (no pair
twice, no antonyms inside one synonym group, …).

A table of word groups is written as one string, `a/b/c d/e …` (`groups` reads it): a Code node compiles its
source at every run, and a string costs a fraction of what a literal of tuples does."""


def groups(text):
    """The groups of a table written as `a/b/c d/e …`: a tuple of tuples of words."""
    return tuple(tuple(group.split("/")) for group in text.split())


# --- content units (`citations.support.units`) -----------------------------------------------------------------

STOP_WORDS = frozenset(
    "a an the and or of to in on at for by with from is are was were be been being it its this that these those as if "
    "then than so do does did can could will would should may might must shall has have had there their they them "
    "you your we our he she his her which who whom what when where how also all any each such into about up out "
    "more most other some very just but i me my".split()
)
# Chinese characters that carry no content: a bigram holding one weighs 0.5, holding two nothing
STOP_CHARS = frozenset("的了是在和与及或等也都就而且这那个之其把被为对从到以于将并要会着过您你我他她它们吗呢吧啊请")
# English words common in any factual sentence (time, sequence, framing): they weigh `Weights.weight_generic`, by stem
GENERIC_WORDS = tuple(
    "during again later year years since time times same while through including include included called between "
    "early new once due prior based several many known well often first last began become became following "
    "currently current number part way made make another both per around".split()
)
# Chinese words as general (a person, a thing, now, already, some): their bigram weighs `Weights.weight_generic`
GENERIC_ZH = frozenset(
    "有人 某人 人们 一些 一个 这个 那个 东西 事情 什么 可能 已经 现在 曾经 目前 非常 一定 其中 之一 "
    "方面 时候 地方 情况 问题 进行 表示 认为 觉得 说话 话人 话者 讲话 自己 一种 一下 很多 比较 存在 需要 "
    "知道 件事 这件 有一 了一 之前 个人".split()
)

# number words and Chinese numerals: they count as numbers ("twenty five" is #25, 三十个 is #30)
EN_NUMBERS = {
    **{
        word: n
        for n, word in enumerate(
            "zero one two three four five six seven eight nine ten eleven twelve thirteen "
            "fourteen fifteen sixteen seventeen eighteen nineteen".split()
        )
    },
    **{word: 10 * n for n, word in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split(), 2)},
}
ZH_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
# the Chinese measure words a number counts (40人, 3次): a number shown as a reason keeps its measure word
MEASURE_WORDS = frozenset("个天次楼层人元分年月日点号周岁倍位条台辆张件")

# --- sentences (`citations.support.sentences`) -------------------------------------------------------------------

# a full stop after one of these (as written, without its dots, casefolded) ends no sentence
ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof st jr sr co inc ltd corp bros vs etc eg ie no nos vol pp fig approx jan feb mar apr jun jul aug "
    "sep sept oct nov dec mt ft gen col lt sgt capt gov sen rep cf al ave rd blvd dept univ est ca ed eds rev hon "
    "op nr tel min max v c".split()
)

# --- negation (`citations.support.negation`) ---------------------------------------------------------------------

# words that hold a negation character without negating (不仅, 非常, 未来)
NOT_NEGATIONS = (
    "不仅 不但 不断 不少 不久 不过 不管 不论 不错 不同 无论 非常 除非 未来 别人 特别 区别 分别 级别 类别 告别 "
    "无数 莫名 没错 并非常 无比 无限 不止 未免 不收费 不收钱 不要钱"
).split()
NEGATION_SKIP = frozenset("need needs want wants to be any only just even".split())  # after an English negation
NEGATION_BRIDGE = "是会能要可有被再也都还就"  # between a Chinese negation and what it negates (不会学习, 没有被…抓到)

# --- scope (`citations.support.scope`): a word widening or narrowing a claim -------------------------------------

SCOPE_ZH = (
    "所有",
    "全部",
    "任何",
    "从来",
    "从不",
    "一直",
    "只有",
    "只能",
    "永远",
    "绝对",
    "完全",
    "一切",
    "每",
    "只",
    "都",
)
SCOPE_EN = frozenset("all every only always entire whole solely exclusively everyone everything".split())

# --- antonyms (`citations.support.antonym`): a word whose opposite stands in the chunk's matching passage ---------

ANTONYMS_ZH = groups(
    "首/末 高/低 增加/减少 增长/下降 上升/下降 上涨/下跌 提高/降低 允许/禁止 可以/禁止 开始/结束 最早/最晚 提前/推迟 "
    "延长/缩短 延长/压缩 扩大/缩小 多于/少于 大于/小于 以上/以下 之前/之后 以前/以后 早于/晚于 支持/反对 稳定/波动 "
    "继续/终止 继续/停止 成功/失败 胜/负 赢/输 干净/脏 全部/部分 全部/一半 正面/负面 肯定/否定 加强/削弱 免费/收费 "
    "开放/关闭 打开/关闭 同意/拒绝 接受/拒绝 相同/不同 真/假 男/女 冷/热 快/慢 长/短 新/旧 年轻/年老 上午/下午 "
    "白天/夜间 白天/晚上 容易/困难 简单/复杂 喜欢/讨厌 安全/危险 进口/出口 买/卖 出生/去世 最多/最少 最大/最小 "
    "最高/最低 必须/无需 必须/不必 好/坏 富/穷 东/西 南/北 上/下 多/少 大/小 增/减 升/降 年初/年末 年初/年底 "
    "月初/月底 弱化/加强 削弱/增强 阻碍/促进 阻碍/推进 失衡/平衡 违反/遵守 落后/先进 古代/现代 增多/减少 扩大/缩减 "
    "远/近 胖/瘦 深/浅 贵/便宜 宽/窄 强/弱 早/晚 内/外 入/出 死/活 紧张/放松 积极/消极 乐观/悲观 主动/被动 "
    "合法/非法 公开/秘密 正确/错误 优点/缺点 提高/打击 保持/改变 独立/依赖 盈利/亏损 顺利/困难 热闹/冷清"
)
ANTONYMS_EN = groups(
    "before/after more/less more/fewer increase/decrease increase/reduce rise/fall rose/fell high/low higher/lower "
    "highest/lowest first/last earliest/latest earlier/later allow/forbid allow/prohibit permit/prohibit win/lose "
    "won/lost winner/loser open/closed opened/closed north/south east/west male/female maximum/minimum above/below "
    "success/failure accept/reject include/exclude older/younger oldest/youngest largest/smallest longest/shortest "
    "larger/smaller longer/shorter most/least born/died start/end begin/end join/leave joined/left buy/sell "
    "bought/sold import/export entrance/exit always/never all/none true/false full/empty same/different "
    "support/oppose gain/loss public/private upper/lower inside/outside success/fail positive/negative"
)
# words holding a one-character word of ANTONYMS_ZH without its meaning (小时 is no 小): not read for that word
COMPOUNDS_ZH = (
    "小时 大家 大约 大概 大多 多少 东西 上午 下午 以上 以下 上班 下班 不少 至少 出现 出来 入口 出口 高兴 好像 新闻 "
    "早上 晚上 内容 以内 以外 另外 此外 长期 强调"
).split()

# --- paraphrase tolerance (`citations.support.chunk`): a chunk holding one word of a group holds the others ------

SYNONYMS_ZH = groups(
    "害怕/生畏/畏惧/恐惧/惧怕/怕 有点/有些/稍微/略微/一点 开始/起始/启动 结束/完成/终了 购买/买/采购 出售/卖/销售 "
    "帮助/协助/帮忙 立即/马上/立刻 需要/须/必须/应/应当/要 可以/能/能够/可 提前/预先/事先 通知/告知/告诉 "
    "时间/时候/时段 每天/每日/天天 电话/致电/拨打 费用/收费/价格/花费/钱 免费/不收费/不要钱/不收钱 公司/企业/单位 "
    "孩子/小孩/儿童/子女 父亲/爸爸 母亲/妈妈 丈夫/老公 妻子/老婆/太太 房子/住房/房屋 工作/上班/职业 "
    "高兴/开心/快乐/愉快 难过/伤心/悲伤/痛苦 生气/愤怒/发火 漂亮/美丽/好看 很多/许多/大量/不少 增加/增长/提高/上升 "
    "减少/降低/下降 发展/进步 国家/政府 晚上/夜间/夜里 早上/早晨/上午 如果/假如/要是 现在/目前/当前/如今 "
    "以前/过去/从前 感到/觉得/感觉 知道/了解/明白/清楚 认为/以为/觉得 喜欢/喜爱/爱 重要/关键"
)
SYNONYMS_EN = groups(
    "start/begin/began/begun/commence/launch end/finish/conclude/complete buy/bought/purchase sell/sold big/large/huge "
    "small/little/tiny help/assist/aid show/display/exhibit die/died/death/dead born/birth film/movie "
    "win/won/victory/defeat/beat lose/lost/loss lead/led write/wrote/written/author take/took/taken give/gave/given "
    "become/became grow/grew/grown know/knew/known leave/left hold/held meet/met teach/taught find/found run/ran "
    "come/came go/went/gone see/saw/seen speak/spoke/spoken choose/chose/chosen fall/fell rise/rose/risen build/built "
    "pay/paid tell/told make/made say/said bring/brought spend/spent send/sent fight/fought keep/kept draw/drew/drawn "
    "sing/sang/sung get/got receive/get/obtain/earn award/prize/honour/honor city/town company/firm/business "
    "use/utilize/employ famous/renowned/noted job/work/position/role song/single/track album/record "
    "appoint/name/named american/us/usa british/uk/england/english jan/january feb/february mar/march apr/april "
    "aug/august sep/sept/september oct/october nov/november dec/december about/approximately/around/roughly "
    "need/require/must allow/permit/let tell/inform/notify fee/cost/price/charge free/complimentary"
)

# --- numbers, units and months (`citations.support.quantities`, `.number`, `.measure`) ---------------------------


def scales(kinds):
    """{unit name: (its kind, its size in the kind's base unit)} from {kind: "name size name size …"}."""
    table = {}
    for kind, line in kinds.items():
        words = line.split()
        for name, size in zip(words[::2], words[1::2]):
            table[name] = (kind, float(size))
    return table


# a quantity also counts in the other units of its kind (460 mm backs 46 cm)
UNIT_SCALE = scales(
    {
        "m": "mm 0.001 毫米 0.001 cm 0.01 厘米 0.01 m 1 米 1 km 1000 公里 1000 千米 1000 inch 0.0254 inches 0.0254 "
        "in 0.0254 ft 0.3048 feet 0.3048 foot 0.3048 mile 1609.344 miles 1609.344",
        "kg": "g 0.001 克 0.001 kg 1 千克 1 公斤 1 斤 0.5 t 1000 吨 1000 lb 0.45359237 "
        "lbs 0.45359237 pounds 0.45359237",
        "l": "ml 0.001 毫升 0.001 l 1 升 1",
        "s": "分钟 60 minute 60 minutes 60 min 60 小时 3600 hour 3600 hours 3600 h 3600 天 86400 day 86400 days 86400 "
        "周 604800 星期 604800 week 604800 weeks 604800",
    }
)
MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
MONTH_NAMES = (
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec"
).split()

# --- swapped roles (`citations.support.roles`) ---------------------------------------------------------------------

ROLE_VERBS = ("defeated", "beat", "overtook", "succeeded", "replaced")  # A defeated B: A and B are its two sides
