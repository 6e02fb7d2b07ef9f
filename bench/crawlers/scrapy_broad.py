# Scrapy (Debian's python3-scrapy) on the broad-crawl site (issue 19): many hosts, a few pages each, one request a
# second per host. Settings as Scrapy's docs recommend for broad crawls and as polite as Crawl Studio's task:
# DownloaderAwarePriorityQueue (the scheduler queue that prefers hosts with fewer requests in the downloader),
# CONCURRENT_REQUESTS = the bench's concurrency, CONCURRENT_REQUESTS_PER_DOMAIN = 1, DOWNLOAD_DELAY = 1 s,
# RANDOMIZE_DOWNLOAD_DELAY off, robots.txt obeyed; everything else is Scrapy's default. Links are followed on the
# page's own host only; one item (the page's h1) per page.
# Run: /usr/bin/python3 scrapy_broad.py STARTS_FILE CONCURRENCY  -> prints one JSON line { "result": ... }
import json
import sys
import time
from urllib.parse import urljoin, urlsplit, urlunsplit

import scrapy
from scrapy.crawler import CrawlerProcess

STARTS, CONCURRENCY = [l.strip() for l in open(sys.argv[1]) if l.strip()], int(sys.argv[2])
counts = {"pages": 0, "items": 0}


class BroadSpider(scrapy.Spider):
    name = "broad"

    def start_requests(self):
        for url in STARTS:
            yield scrapy.Request(url, callback=self.parse)

    def parse(self, response):
        counts["pages"] += 1
        counts["items"] += 1
        yield {"title": " ".join(response.css("h1::text").get("").split()), "url": response.url}
        here = urlsplit(response.url).netloc
        for href in response.css("a").xpath("@href").getall():
            u = urlsplit(urljoin(response.url, href.strip()))
            if u.scheme in ("http", "https") and u.netloc == here:
                yield scrapy.Request(urlunsplit((u.scheme, u.netloc, u.path or "/", u.query, "")), callback=self.parse)


process = CrawlerProcess(
    settings={
        "SCHEDULER_PRIORITY_QUEUE": "scrapy.pqueues.DownloaderAwarePriorityQueue",
        "CONCURRENT_REQUESTS": CONCURRENCY,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
        "DOWNLOAD_DELAY": 1,
        "RANDOMIZE_DOWNLOAD_DELAY": False,
        "ROBOTSTXT_OBEY": True,
        "LOG_LEVEL": "WARNING",
        "TELNETCONSOLE_ENABLED": False,
        "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7",
    }
)
t0 = time.monotonic()
process.crawl(BroadSpider)
process.start()
seconds = time.monotonic() - t0
print(json.dumps({"result": {"pages": counts["pages"], "items": counts["items"], "seconds": seconds, "pagesPerSec": counts["pages"] / seconds}}))
