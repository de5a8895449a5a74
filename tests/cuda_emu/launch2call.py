# launch2call.py IN.cu OUT.cpp: rewrite a .cu file for the CPU emulation in this folder:
# `kern<<<grid, block[, shm]>>>(args)` becomes `emu_launch(kern, dim3(grid), dim3(block),
# shm, args)` and the dynamic shared-memory declaration points at the block's buffer.
import re,sys
s=open(sys.argv[1]).read()
s=s.replace('extern __shared__ float sm[];','float *sm = (float *)g_blk->dyn;')
def split(a):
    out=[];d=0;cur=''
    for ch in a:
        if ch in '([<': d+=1
        if ch in ')]>': d-=1
        if ch==',' and d==0: out.append(cur);cur=''
        else: cur+=ch
    out.append(cur);return [x.strip() for x in out]
def rep(m):
    name=m.group(1); cfg=split(m.group(2)); args=m.group(3)
    while len(cfg)<3: cfg.append('0')
    return 'emu_launch(%s, dim3(%s), dim3(%s), (size_t)(%s), %s)'%(name,cfg[0],cfg[1],cfg[2],args)
def rep2(m):
    cfg=split(m.group(2))
    while len(cfg)<3: cfg.append('0')
    return 'emu_launch(%s, dim3(%s), dim3(%s), (size_t)(%s), '%(m.group(1),cfg[0],cfg[1],cfg[2])
s=re.sub(r'([A-Za-z_][A-Za-z_0-9]*(?:<[A-Za-z_0-9]+>)?)<<<(.*?)>>>\(',rep2,s,flags=re.S)
open(sys.argv[2],'w').write(s)
