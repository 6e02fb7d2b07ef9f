# Samples Chromium processes every 0.1 s for SECONDS; writes the peak PSS split by process type and the distinct
# PIDs seen per type to OUT.json (bench/results/2026-12-05-browser-processes.md). Usage: chromium-pss.py SECONDS OUT.json
import os,time,re,sys,collections,json
dur=float(sys.argv[1]); out=sys.argv[2]
best=(0,None)
seen=collections.defaultdict(set)
end=time.time()+dur
while time.time()<end:
    cls=collections.Counter(); cnt=collections.Counter()
    for pid in os.listdir('/proc'):
        if not pid.isdigit(): continue
        try:
            cmd=open(f'/proc/{pid}/cmdline','rb').read().split(b'\0')
            if not cmd or b'chrom' not in cmd[0]: continue
            args=' '.join(a.decode(errors='ignore') for a in cmd).split(' ')
            t=next((a.split('=',1)[1] for a in args if a.startswith('--type=')),'browser')
            if t=='utility':
                t+=':'+next((a.split('=',1)[1] for a in args if a.startswith('--utility-sub-type=')),'?')
            if t=='renderer' and any(a.startswith('--extension-process') for a in args): t='renderer:ext'
            s=open(f'/proc/{pid}/smaps_rollup').read()
            pss=int(re.search(r'^Pss:\s+(\d+)',s,re.M).group(1))
            cls[t]+=pss; cnt[t]+=1; seen[t].add(pid)
        except Exception: pass
    tot=sum(cls.values())
    if tot>best[0]: best=(tot,{k:(round(v/1024),cnt[k]) for k,v in cls.items()})
    time.sleep(0.1)
json.dump({'peak_mb':round(best[0]/1024),'by_type':best[1],'distinct':{k:len(v) for k,v in seen.items()}},open(out,'w'),indent=1)
