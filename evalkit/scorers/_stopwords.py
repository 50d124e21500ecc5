"""English stop words left out when keywords are extracted from a reference text.

Function words only (articles, pronouns, auxiliaries, prepositions, conjunctions, common
adverbs and contraction fragments), lowercase; content words are never listed, so a keyword a
user would expect to be checked is not silently dropped.
"""

from __future__ import annotations

# fmt: off
ENGLISH_STOP_WORDS: frozenset[str] = frozenset({
    "a", "about", "above", "after", "again", "against", "all", "also", "am", "an", "and", "any",
    "are", "aren", "as", "at", "be", "because", "been", "before", "being", "below", "between",
    "both", "but", "by", "can", "cannot", "could", "couldn", "d", "did", "didn", "do", "does",
    "doesn", "doing", "don", "down", "during", "each", "either", "else", "ever", "few", "for",
    "from", "further", "had", "hadn", "has", "hasn", "have", "haven", "having", "he", "her",
    "here", "hers", "herself", "him", "himself", "his", "how", "however", "i", "if", "in", "into",
    "is", "isn", "it", "its", "itself", "just", "ll", "m", "ma", "may", "me", "might", "mightn",
    "more", "most", "must", "mustn", "my", "myself", "neither", "no", "nor", "not", "now", "o",
    "of", "off", "on", "once", "only", "or", "other", "ought", "our", "ours", "ourselves", "out",
    "over", "own", "re", "s", "same", "shall", "shan", "she", "should", "shouldn", "so", "some",
    "such", "t", "than", "that", "the", "their", "theirs", "them", "themselves", "then", "there",
    "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "upon", "us",
    "ve", "very", "was", "wasn", "we", "were", "weren", "what", "when", "where", "which", "while",
    "who", "whom", "whose", "why", "will", "with", "won", "would", "wouldn", "y", "yet", "you",
    "your", "yours", "yourself", "yourselves",
})
# fmt: on
