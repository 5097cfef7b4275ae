"""cuda_magic.inspect.flow: a SASS listing as instructions, basic blocks and post-dominators."""

from cuda_magic.inspect.flow import basic_blocks, branch_predicate, parse, postdominators, register

LISTING = """
        /*0000*/                   S2R R0, SR_TID.X ;
        /*0010*/                   ISETP.GE.AND P0, PT, R0, 0x20, PT ;
        /*0020*/               @P0 BRA `(.L_x_1) ;
        /*0030*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
.L_x_1:
        /*0040*/                   EXIT ;
"""


def test_a_branch_around_a_barrier():
    code, labels = parse(LISTING)
    assert [i.base for i in code] == ["S2R", "ISETP", "BRA", "BAR", "EXIT"]
    assert labels == {".L_x_1": 0x40} and code[2].guard == "P0" and code[2].target == ".L_x_1"
    blocks = basic_blocks(code, labels)
    assert {s: b.succ for s, b in blocks.items()} == {0: (4, 3), 3: (4,), 4: ()}
    pdom, bit = postdominators(blocks)
    assert pdom[0] & bit[4] and not pdom[0] & bit[3]       # every path exits; not every one waits
    assert register("-R9.reuse") == ("R9", ".reuse") and branch_predicate(code[2]) is None
