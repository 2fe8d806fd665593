"""pack_features_for_thd labels a feature without labels with -100 whatever ignore_index is. Breaks: [pack-features]"""

from mutant_base import reference, reference_with


def pack_features_for_thd(features, *, ignore_index=-100):
    return reference.pack_features_for_thd(features)


BACKEND = reference_with("m-fn-pack-ignores-ignore-index", pack_features_for_thd=pack_features_for_thd)
