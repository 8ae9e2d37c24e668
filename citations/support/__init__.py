"""The support check (docs/support-check.md): one function, `check_support` in `citations.support.check`.

Its modules, each one subject, the ones below importing only the ones above:
- tables: the word tables, as data; weights: the numbers, one frozen `Weights` passed in (`DEFAULT_WEIGHTS`);
- text: how text is read (NFKC, a shortened second year, the token patterns); units: content units and their weights;
  words: a text's Latin words and their forms; sentences: sentences, a citation's sentence, a sentence's clauses;
  quantities: numbers with their unit or thing, unit conversions;
- negation: the negation cue; chunk: the chunk view (its units with synonyms and conversions, its passages);
- the other cues: antonym, scope, number, measure (another month or unit), roles;
- score: a (sentence, chunk) pair's score; reasons: what a weak citation carries; check: `check_support`.
"""
