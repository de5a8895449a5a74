/* test_philox.c: Philox-4x32-10 against the known-answer vectors published with the
 * generator (Random123's kat_vectors: counter[4] key[2] -> output[4]). */
#include "ops/philox.h"
#include "testutil.h"

static void kat(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0, uint32_t k1, uint32_t e0,
                uint32_t e1, uint32_t e2, uint32_t e3) {
    const uint32_t c[4] = {c0, c1, c2, c3}, k[2] = {k0, k1};
    uint32_t o[4];
    philox4x32_10(o, c, k);
    ck_assert_msg(o[0] == e0 && o[1] == e1 && o[2] == e2 && o[3] == e3, "got %08x %08x %08x %08x", o[0], o[1], o[2],
                  o[3]);
}

START_TEST(test_philox_known_answers) {
    kat(0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8);
    kat(~0u, ~0u, ~0u, ~0u, ~0u, ~0u, 0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd);
    kat(0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09, 0x94fdcceb, 0x5001e420,
        0x24126ea1);
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("philox");
    TCase *tc = tcase_create("philox");
    tcase_add_test(tc, test_philox_known_answers);
    suite_add_tcase(s, tc);
    return s;
}
GMA_TEST_MAIN()
