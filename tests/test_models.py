"""Loading pairs by local path: a pair with different tokenizers and a missing model are clear errors."""

import pytest
from tiny_pair import tiny_models
from transformers import AutoTokenizer

from dropmatch.models import load_pair


@pytest.fixture(scope="module")
def saved_pairs(tmp_path_factory, tokenizer):
    root = tmp_path_factory.mktemp("pairs")
    target, draft = tiny_models(len(tokenizer))
    target.save_pretrained(root / "target")
    tokenizer.save_pretrained(root / "target")
    draft.save_pretrained(root / "draft")
    tokenizer.save_pretrained(root / "draft")
    draft.save_pretrained(root / "other")
    other = AutoTokenizer.from_pretrained(root / "target")  # a copy: the shared fixture stays untouched
    other.add_tokens(["<an-extra-token>"])  # the same vocabulary plus one id: a different tokenizer
    other.save_pretrained(root / "other")
    return root


def test_local_pair_loads_with_shared_vocabulary(saved_pairs):
    pair = load_pair(str(saved_pairs / "target"), str(saved_pairs / "draft"), "float32", "cpu")
    assert pair.vocab_size == pair.target.get_output_embeddings().weight.shape[0]
    assert pair.eos_ids


def test_different_tokenizers_are_refused(saved_pairs):
    with pytest.raises(ValueError, match="use different tokenizers"):
        load_pair(str(saved_pairs / "target"), str(saved_pairs / "other"), "float32", "cpu")


def test_missing_model_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="cannot load"):
        load_pair(str(tmp_path / "nowhere"), str(tmp_path / "nowhere"), "float32", "cpu")
    with pytest.raises(ValueError, match="dtype must be one of"):
        load_pair(dtype="int3")


def test_end_tokens_cover_the_config_the_tokenizer_and_the_chat_family(tokenizer):
    from transformers import GenerationConfig

    from dropmatch.models import end_token_ids

    im_end, endoftext = tokenizer.convert_tokens_to_ids(["<|im_end|>", "<|endoftext|>"])
    assert tokenizer.eos_token_id == im_end  # the tokenizer names only one of them, as the embedded GGUF does
    assert end_token_ids(tokenizer) == {im_end, endoftext}
    assert end_token_ids(tokenizer, GenerationConfig(eos_token_id=[7, im_end])) == {7, im_end, endoftext}
