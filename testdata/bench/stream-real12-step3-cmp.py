import json,glob,os
def key(r): return (r['metric'],r.get('notion',''),r.get('p'),r.get('r'))
worst={}
for f in sorted(glob.glob('*.mem.json')):
    n=f[:-9]
    a=json.load(open(f)); b=json.load(open(n+'.str.json'))
    A={key(r):r for r in a['results']}
    assert len(a['results'])==len(b['results']), n
    for r in b['results']:
        w=A[key(r)]
        if r.get('error') or w.get('error'): print('ERROR',n,key(r),r.get('error'),w.get('error')); continue
        if r['metric']=='ks':
            ok=r['interval'][0]-1e-12<=w['value']<=r['interval'][1]+1e-12
            worst.setdefault('ks_outside',0); worst['ks_outside']+= (not ok)
            continue
        d=abs(r['value']-w['value'])/max(1e-300,abs(w['value']))
        worst[r['metric']]=max(worst.get(r['metric'],0),d)
        if r.get('bins')!=w.get('bins'): print('BINS differ',n,key(r),r.get('bins'),w.get('bins'))
    print(n,open(n+'.time').read().strip())
    if os.path.exists(n+'.wmem.json'):
        a=json.load(open(n+'.wmem.json')); b=json.load(open(n+'.wstr.json')); c=json.load(open(n+'.wdef.json'))
        for wr,sr,dr in zip(a['results'],b['results'],c['results']):
            d=abs(sr['value']-wr['value'])/max(1e-300,abs(wr['value']))
            worst['ece_witness']=max(worst.get('ece_witness',0),d)
            inside=dr['interval'][0]<=wr['value']<=dr['interval'][1]
            print('  witness p=%s mem %.6g (h %.4g) all-points %.6g (h %.4g, %s) m=2000 %.6g [%.6g, %.6g] %s (%s)'%(wr['p'],wr['value'],wr['bandwidth'],sr['value'],sr['bandwidth'],open(n+'.wtime').read().strip(),dr['value'],dr['interval'][0],dr['interval'][1],'covers' if inside else 'MISS',open(n+'.wdtime').read().strip()))
print(worst)
