/**
 * The live transcript page's one script, inlined under the page's CSP nonce: it streams new
 * messages and hand-off changes in (Server-Sent Events on the link's own token), remembers which
 * teammate is acting (asked once, kept in this browser), shows a customer's photos, voice notes and
 * documents as the page does (by the page's own signed links, which the stream gives), and posts "Take over", replies, "Hand
 * back", "Close" and a change's "Run it" / "Decline" with the link's token and the page's CSRF token. It only ever creates text
 * nodes from what the server sends, and requests nothing but its own origin.
 */

// Plain ES2020 for any phone browser; no template literals, so it sits in a TypeScript string as is.
export const LIVE_PAGE_SCRIPT = `
(function () {
  'use strict';
  var config = JSON.parse(document.getElementById('live-config').textContent);
  var base = window.location.pathname;
  var linkQuery = 'expires=' + encodeURIComponent(config.expires) + '&sig=' + encodeURIComponent(config.sig);
  var handoff = config.handoff;
  var busy = false;
  var ended = false;
  var $ = function (id) { return document.getElementById(id); };
  var state = $('state'), live = $('live'), notice = $('notice'), who = $('teammate'), reply = $('reply'), log = $('log');
  var buttons = { take: $('take'), handBack: $('hand-back'), close: $('close'), send: $('send') };
  var dayFormat = new Intl.DateTimeFormat('en-GB', { timeZone: 'UTC', weekday: 'short', day: 'numeric', month: 'long', year: 'numeric' });
  var timeFormat = new Intl.DateTimeFormat('en-GB', { timeZone: 'UTC', hour: '2-digit', minute: '2-digit' });
  var storageKey = 'transcript-teammate:' + (handoff ? handoff.team : 'none');

  function element(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // Who is acting: asked once, remembered in this browser for the team.
  try {
    var remembered = window.localStorage.getItem(storageKey);
    if (remembered && (config.members.length === 0 || config.members.indexOf(remembered) >= 0)) who.value = remembered;
  } catch (error) { /* storage may be off: ask every time */ }
  who.addEventListener('change', function () {
    try { window.localStorage.setItem(storageKey, who.value.trim()); } catch (error) { /* ignore */ }
    update();
  });

  function stateText() {
    if (!handoff) return 'No open hand-off: the assistant has this conversation.';
    if (handoff.status === 'taken') return (handoff.holder || 'A teammate') + ' has this conversation; the assistant is silent.';
    return 'Handed to ' + handoff.teamLabel + ': the assistant still answers until someone takes over.';
  }

  function update() {
    var open = Boolean(handoff) && !ended;
    var taken = open && handoff.status === 'taken';
    state.textContent = ended ? 'This link has expired: open the newest link from a notice.' : stateText();
    buttons.take.disabled = busy || !open || taken;
    buttons.handBack.disabled = busy || !taken;
    buttons.close.disabled = busy || !open;
    buttons.send.disabled = busy || !open;
    reply.disabled = !open;
  }

  function say(text) { notice.textContent = text || ''; }

  // A customer's photos, voice notes and documents, as the page renders stored ones (transcript-media.ts).
  function addMedia(article, media) {
    media.forEach(function (item) {
      var type = String(item.contentType || '');
      var kind = item.kind || (type.indexOf('image/') === 0 ? 'image' : type.indexOf('audio/') === 0 ? 'audio' : 'document');
      var label = item.filename || { image: 'photo', audio: 'voice note', document: 'document' }[kind] || 'document';
      var url = typeof item.url === 'string' && item.url.indexOf('/transcripts/') === 0 ? item.url : '';
      if (!url) {
        article.appendChild(element('p', 'media', 'Attachment: ' + label + (item.error ? ' · not used: ' + item.error : '')));
        return;
      }
      var figure;
      if (kind === 'image') {
        figure = element('figure', 'media');
        var anchor = figure.appendChild(element('a'));
        anchor.href = url;
        var image = anchor.appendChild(element('img'));
        image.src = url;
        image.alt = item.filename ? 'Photo: ' + item.filename : 'Photo from the customer';
      } else if (kind === 'audio') {
        figure = element('figure', 'media');
        var audio = figure.appendChild(element('audio'));
        audio.controls = true;
        audio.preload = 'none';
        audio.src = url;
        figure.appendChild(element('p', 'transcription', item.transcription !== undefined ? 'Transcription: ' + item.transcription : 'Not transcribed'));
      } else {
        figure = element('p', 'media');
        var name = item.filename || 'document';
        var download = figure.appendChild(element('a', 'document', 'Download ' + name));
        download.href = url;
        download.setAttribute('download', name);
      }
      article.appendChild(figure);
    });
  }

  function addMessage(message) {
    var shown = log.querySelector('li[data-id="' + CSS.escape(message.id) + '"]');
    if (shown) {
      // First streamed as its caption, then with its media once the service had them.
      if (message.media && message.media.length && !shown.querySelector('.media')) {
        shown.querySelector('.text').textContent = message.text;
        addMedia(shown.querySelector('article'), message.media);
      }
      return;
    }
    var empty = log.querySelector('.empty');
    if (empty) empty.remove();
    var at = new Date(message.at);
    var day = dayFormat.format(at);
    var headings = log.querySelectorAll('h2');
    var list = log.querySelector('ol:last-of-type');
    if (!list || !headings.length || headings[headings.length - 1].textContent !== day) {
      log.appendChild(element('h2', '', day));
      list = log.appendChild(element('ol'));
    }
    var kind = { customer: 'customer', assistant: 'assistant', teammate: 'teammate', system: 'system' }[message.author] || 'system';
    var author = message.author === 'teammate' ? (message.name || 'Teammate') : { customer: 'Customer', assistant: 'Assistant', system: 'Service' }[message.author] || 'Service';
    var item = element('li', kind);
    item.setAttribute('data-id', message.id);
    var article = item.appendChild(element('article'));
    var meta = article.appendChild(element('p', 'meta'));
    meta.appendChild(element('span', 'author', author));
    meta.appendChild(document.createTextNode(' · '));
    var time = meta.appendChild(element('time', '', timeFormat.format(at)));
    time.setAttribute('datetime', at.toISOString());
    article.appendChild(element('p', 'text', message.text));
    if (message.media && message.media.length) addMedia(article, message.media);
    if (message.template) article.appendChild(element('p', 'status', 'Sent as the approved template (outside WhatsApp\\'s 24-hour window)'));
    list.appendChild(item);
    var count = $('message-count');
    count.textContent = String(log.querySelectorAll('li[data-id]').length);
    var nearEnd = window.innerHeight + window.scrollY >= document.body.scrollHeight - 200;
    if (nearEnd) item.scrollIntoView({ block: 'end' });
  }

  var source = new EventSource(base + '/events?' + linkQuery);
  source.addEventListener('open', function () { live.textContent = 'Live: new messages appear here.'; });
  source.addEventListener('error', function () {
    live.textContent = source.readyState === EventSource.CLOSED ? 'Live updates stopped. Reload the page.' : 'Reconnecting…';
  });
  source.addEventListener('message', function (event) { addMessage(JSON.parse(event.data)); });
  source.addEventListener('state', function (event) {
    handoff = JSON.parse(event.data).handoff;
    update();
  });
  source.addEventListener('expired', function () {
    ended = true;
    source.close();
    live.textContent = 'Live updates stopped.';
    update();
  });

  function act(action, text, actionId) {
    var name = who.value.trim();
    if (!name) {
      say('Choose your name first: every action is recorded with who did it.');
      who.focus();
      return Promise.resolve(false);
    }
    busy = true;
    say('');
    update();
    var body = { expires: config.expires, sig: config.sig, csrf: config.csrf, handoffId: handoff ? handoff.id : '', action: action, by: name };
    if (text !== undefined) body.text = text;
    if (actionId !== undefined) body.actionId = actionId;
    return fetch(base + '/actions', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
      body: JSON.stringify(body),
      cache: 'no-store',
    })
      .then(function (response) {
        return response.json().catch(function () { return {}; }).then(function (result) {
          if (result.handoff !== undefined) handoff = result.handoff;
          if (result.action) showChange(result.action);
          if (!response.ok) say(result.error || 'That did not work (' + response.status + ').');
          return response.ok;
        });
      })
      .catch(function () {
        say('Could not reach the service. Check your connection and try again.');
        return false;
      })
      .then(function (ok) {
        busy = false;
        update();
        return ok;
      });
  }

  // A change only a teammate may run: its state after a decision, and no more buttons once decided.
  function showChange(change) {
    var item = log.querySelector('li[data-action-id="' + CSS.escape(change.id) + '"]');
    if (!item) return;
    item.querySelector('.action-state').textContent = change.stateText;
    if (change.state !== 'proposed') {
      var controls = item.querySelector('.actions');
      if (controls) controls.remove();
    }
  }
  log.addEventListener('click', function (event) {
    var target = event.target.closest && event.target.closest('button[data-run], button[data-decline]');
    if (!target || busy) return;
    var run = target.hasAttribute('data-run');
    var id = target.getAttribute(run ? 'data-run' : 'data-decline');
    var group = target.parentNode.querySelectorAll('button');
    for (var index = 0; index < group.length; index += 1) group[index].disabled = true;
    act(run ? 'run_action' : 'decline_action', undefined, id).then(function () {
      for (var again = 0; again < group.length; again += 1) group[again].disabled = false;
    });
  });

  buttons.take.addEventListener('click', function () { act('take_over'); });
  buttons.handBack.addEventListener('click', function () { act('hand_back'); });
  buttons.close.addEventListener('click', function () { act('close'); });
  $('reply-form').addEventListener('submit', function (event) {
    event.preventDefault();
    var text = reply.value.trim();
    if (!text) return;
    act('reply', text).then(function (ok) { if (ok) reply.value = ''; });
  });
  update();
})();
`;
