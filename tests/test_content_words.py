"""Which tokens belong to content words: pieces are joined back into text, so a word split
across tokens counts whole, and punctuation or function words never count."""

from anvil_local.metrics.content_words import content_token_mask


def test_words_split_across_tokens_count_whole_and_function_words_do_not():
    pieces = ["Two", " guards", " were", " robbed", " in", " ed", "inburgh", " ."]
    assert content_token_mask(pieces) == [True, True, False, True, False, True, True, False]


def test_apostrophes_and_abbreviations():
    pieces = [" Russia", "'", "s", " U", ".", "K", " is", " not"]
    # "Russia's" is one word; the dots of "U.K." are punctuation; a negation is content
    assert content_token_mask(pieces) == [True, True, True, True, False, True, False, True]


def test_case_does_not_matter_and_numbers_are_content():
    assert content_token_mask(["The", " THE", " 47"]) == [False, False, True]


def test_a_text_without_content_words_counts_every_token():
    assert content_token_mask(["It", " was", " ."]) == [True, True, True]
    assert content_token_mask([]) == []
