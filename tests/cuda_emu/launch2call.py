# launch2call.py IN.cu OUT.cpp: rewrite a .cu file for the CPU emulation in this folder:
# `kern<<<grid, block[, shm]>>>(args)` becomes `emu_launch(kern, "kern", dim3(grid),
# dim3(block), shm, args)` and every dynamic shared-memory declaration (`extern __shared__ T name[];`)
# points at the block's buffer.
import re,sys
s=open(sys.argv[1]).read()
s=re.sub(r'extern\s+__shared__\s+(\w+)\s+(\w+)\[\];',r'\1 *\2 = (\1 *)g_blk->dyn;',s)
def split(a):
    out=[];d=0;cur=''
    for ch in a:
        if ch in '([<': d+=1
        if ch in ')]>': d-=1
        if ch==',' and d==0: out.append(cur);cur=''
        else: cur+=ch
    out.append(cur);return [x.strip() for x in out]
def rep2(m):
    cfg=split(m.group(2))
    while len(cfg)<3: cfg.append('0')
    return 'emu_launch(%s, "%s", dim3(%s), dim3(%s), (size_t)(%s), '%(m.group(1),m.group(1),cfg[0],cfg[1],cfg[2])
s=re.sub(r'([A-Za-z_][A-Za-z_0-9]*(?:<[A-Za-z_0-9]+>)?)<<<(.*?)>>>\(',rep2,s,flags=re.S)
s=re.sub(r'\bNULL\b','nullptr',s) # a NULL kernel argument must convert to the parameter's pointer type
open(sys.argv[2],'w').write(s)
