#include "tokenizer/vocab.h"

#include <gtest/gtest.h>

#include "test_vocab_builder.h"

namespace lazyattn::tokenizer {
namespace {

using testing_support::make_byte_vocab;

TEST(Vocab, AttributesFromTokenTypes) {
    VocabData d = make_byte_vocab({{"<|im_start|>", TokenType::kControl},
                                   {"<tool>", TokenType::kUserDefined},
                                   {"<unk>", TokenType::kUnknown},
                                   {"<unused0>", TokenType::kUnused},
                                   {"<0x41>", TokenType::kByte}},
                                  {});
    auto v = Vocab::build(d, false);
    ASSERT_TRUE(v.ok()) << v.status().to_string();
    EXPECT_EQ(v->size(), 261);
    EXPECT_EQ(v->attr('a'), kAttrNormal);
    EXPECT_EQ(v->attr(256), kAttrControl);
    EXPECT_EQ(v->attr(257), kAttrUserDefined);
    EXPECT_EQ(v->attr(258), kAttrUnknown);
    EXPECT_EQ(v->attr(259), kAttrUnused);
    EXPECT_EQ(v->attr(260), kAttrByte);
    EXPECT_EQ(v->find("<tool>"), 257);
    EXPECT_EQ(v->find("nope"), std::nullopt);
    // Control, user-defined and unknown tokens, longest first, ties by id.
    EXPECT_EQ(v->special_tokens(), (std::vector<TokenId>{256, 257, 258}));
}

TEST(Vocab, DefaultsAndMetadataIds) {
    VocabData d = make_byte_vocab({}, {});
    auto v = Vocab::build(d, false);
    ASSERT_TRUE(v.ok());
    EXPECT_EQ(v->special().bos, 11);  // llama.cpp's default for "gpt2" vocabularies
    EXPECT_EQ(v->special().eos, 11);
    EXPECT_FALSE(v->add_bos());

    d.bos_id = 5;
    d.eos_id = 100000;  // out of range: ignored
    d.add_bos = true;
    d.add_eos = true;
    v = Vocab::build(d, false);
    ASSERT_TRUE(v.ok());
    EXPECT_EQ(v->special().bos, 5);
    EXPECT_EQ(v->special().eos, 11);
    EXPECT_TRUE(v->add_bos());
    EXPECT_TRUE(v->add_eos());

    d.add_bos.reset();
    EXPECT_TRUE(Vocab::build(d, true)->add_bos());  // the pre-tokenizer's default applies
}

TEST(Vocab, DetectsEndOfGenerationTokensByText) {
    VocabData d = make_byte_vocab({{"<|endoftext|>", TokenType::kControl},
                                   {"<|im_start|>", TokenType::kControl},
                                   {"<|im_end|>", TokenType::kNormal},  // mis-typed in the file
                                   {"<|eot_id|>", TokenType::kControl}},
                                  {});
    d.eos_id = 256;
    auto v = Vocab::build(d, false);
    ASSERT_TRUE(v.ok());
    EXPECT_TRUE(v->is_eog(256));
    EXPECT_FALSE(v->is_eog(257));
    EXPECT_TRUE(v->is_eog(258));
    EXPECT_TRUE(v->is_eog(259));
    EXPECT_FALSE(v->is_eog('a'));
    EXPECT_EQ(v->special().eot, 256);          // first EOT-looking text by id
    EXPECT_TRUE(v->attr(258) & kAttrControl);  // forced to control, as llama.cpp does
}

TEST(Vocab, RejectsInconsistentTables) {
    VocabData d = make_byte_vocab({{"a"}}, {});  // duplicate of byte token 'a'
    auto v = Vocab::build(d, false);
    ASSERT_FALSE(v.ok());
    EXPECT_EQ(v.status().code(), StatusCode::kCorrupt);

    d = make_byte_vocab({}, {});
    d.token_types.resize(10);
    EXPECT_EQ(Vocab::build(d, false).status().code(), StatusCode::kCorrupt);

    d = make_byte_vocab({}, {});
    d.scores.assign(3, 0.0);
    EXPECT_EQ(Vocab::build(d, false).status().code(), StatusCode::kCorrupt);

    EXPECT_EQ(Vocab::build(VocabData{}, false).status().code(), StatusCode::kCorrupt);
}

TEST(Vocab, EmptyTokensAreRenamed) {
    VocabData d = make_byte_vocab({{""}}, {});
    auto v = Vocab::build(d, false);
    ASSERT_TRUE(v.ok());
    EXPECT_EQ(v->text(256), "[EMPTY_256]");
}

}  // namespace
}  // namespace lazyattn::tokenizer
